"""wick.nn: a torch-shaped module layer over wick's ops.

Modules hold Parameters (leaf tensors that require grad) and submodules,
registered by assignment as in torch (self.fc = Linear(4, 2)); parameters(),
named_parameters(), state_dict() / load_state_dict(), train() / eval(),
zero_grad() and module(x) -> forward(x) behave as torch's. The computation
is wick's: wick.nn.functional (python/wick/functional.py) over the C ops of
python/src/nn.c and the other parts of the binding. Initialisation follows
torch's defaults (kaiming-uniform Linear / Conv2d weights from wick.rand,
N(0, 1) embeddings), drawn from the device's generator (wick.manual_seed).

Parameters are plain wick.Tensor objects (the C type is not subclassable):
Parameter(t) returns a new leaf that requires grad, and
isinstance(p, Parameter) is true for the tensors Parameter made.
"""
import collections
import math
import sys
import weakref

from . import _wick
from . import functional
from . import nn_init as init
from ._wick import Tensor

# `import wick.nn.functional as F` / `wick.nn.init` find the modules here (nn is a module, not a package)
sys.modules[__name__ + ".functional"] = functional
sys.modules[__name__ + ".init"] = init

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "GroupNorm", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LayerNorm", "Linear", "LogSoftmax", "MSELoss", "Module", "ModuleDict",
    "ModuleList", "NLLLoss", "Parameter", "RMSNorm", "ReLU", "Sequential", "SiLU", "Sigmoid", "SmoothL1Loss",
    "Softmax", "Tanh", "functional", "init",
]

# id -> the tensor Parameter() made; an entry leaves with its tensor (weak values)
_parameters = weakref.WeakValueDictionary()


class _ParameterMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and _parameters.get(id(obj)) is obj


class Parameter(metaclass=_ParameterMeta):
    """Parameter(data=None, requires_grad=True)

    A module parameter: a new contiguous copy of data (a Tensor, or anything
    wick.tensor takes) that requires grad (a leaf) — unlike torch, the copy
    does not share data's memory. The result is a wick.Tensor;
    isinstance(p, wick.nn.Parameter) recognises it."""

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _wick.empty(0)
        elif not isinstance(data, Tensor):
            data = _wick.tensor(data)
        p = _wick._param_new(data) if requires_grad else _wick.tensor(data)
        _parameters[id(p)] = p
        return p


def _to_wick(v):
    """A state_dict value as a wick tensor: wick tensors as they are, torch
    tensors through numpy, anything else through wick.as_tensor."""
    if isinstance(v, Tensor):
        return v
    if hasattr(v, "detach") and hasattr(v, "numpy"):  # a torch tensor
        return _wick.tensor(v.detach().cpu().numpy())
    return _wick.as_tensor(v)


_IncompatibleKeys = collections.namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Module()

    Base class of every layer: subclasses call super().__init__() and assign
    Parameters and Modules as attributes; forward() does the work."""

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    # ---- registration ----

    def _dicts(self):
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError("cannot assign to a Module before Module.__init__() was called")
        return d["_parameters"], d["_buffers"], d["_modules"]

    def __setattr__(self, name, value):
        params, buffers, modules = self._dicts()
        if isinstance(value, Parameter):
            self.__dict__.pop(name, None)
            buffers.pop(name, None)
            modules.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            self.__dict__.pop(name, None)
            params.pop(name, None)
            buffers.pop(name, None)
            modules[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter '{name}' "
                                "(wick.nn.Parameter or None expected)")
            params[name] = None
        elif name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module '{name}' "
                                "(wick.nn.Module or None expected)")
            modules[name] = None
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer '{name}' "
                                "(wick.Tensor or None expected)")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):  # only called when normal lookup fails
        d = self.__dict__
        for k in ("_parameters", "_buffers", "_modules"):
            if k in d and name in d[k]:
                return d[k][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for k in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(k, ()):
                del self.__dict__[k][name]
                self.__dict__["_non_persistent"].discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name, param):
        """register_parameter(name, param)"""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} as parameter '{name}' "
                            "(wick.nn.Parameter or None expected)")
        self._dicts()[0][name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """register_buffer(name, tensor, persistent=True)

        A tensor that is state but not a parameter (in state_dict unless
        persistent is False)."""
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign {type(tensor).__name__} as buffer '{name}' (wick.Tensor or None expected)")
        self._dicts()[1][name] = tensor
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name, module):
        """add_module(name, module)"""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a wick.nn.Module")
        self._dicts()[2][name] = module

    register_module = add_module

    # ---- calling ----

    def forward(self, *args, **kwargs):
        """forward(*args, **kwargs)"""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- traversal ----

    def named_modules(self, memo=None, prefix=""):
        """named_modules(memo=None, prefix='')

        (name, module) for this module and every descendant, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name)

    def modules(self):
        """modules()"""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """named_children()"""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """children()"""
        for _, m in self.named_children():
            yield m

    def _named(self, kind, prefix, recurse):
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, t in m.__dict__[kind].items():
                if t is None or id(t) in seen:
                    continue
                seen.add(id(t))
                yield mp + ("." if mp else "") + name, t

    def named_parameters(self, prefix="", recurse=True):
        """named_parameters(prefix='', recurse=True)

        (dotted name, parameter), each parameter once (shared ones under their first name)."""
        return self._named("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        """parameters(recurse=True)"""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True):
        """named_buffers(prefix='', recurse=True)"""
        return self._named("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        """buffers(recurse=True)"""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state ----

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """state_dict(destination=None, prefix='', keep_vars=False)

        An ordered dict of dotted names to the parameters and persistent
        buffers. keep_vars False gives detached tensors sharing their memory
        (torch's default) where detach() exists, else the tensors themselves."""
        out = collections.OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars or not hasattr(p, "detach") else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b
        # every path to a submodule, as torch's (a module used twice is saved under both names)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict=True):
        """load_state_dict(state_dict, strict=True)

        Copy values (wick tensors, numpy arrays, torch tensors) into the
        parameters and buffers in place (so optimizers holding them see the
        new values), cast to each one's dtype. strict: missing or unexpected
        keys raise KeyError. Returns (missing_keys, unexpected_keys)."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict(): missing keys {missing}, unexpected keys {unexpected}")
        for name, dst in own.items():
            if name not in state_dict:
                continue
            src = _to_wick(state_dict[name])
            if src.dtype != dst.dtype:
                src = _wick.tensor(src, dtype=dst.dtype)
            if src.shape != dst.shape:
                raise _wick.ShapeError(f"load_state_dict(): size mismatch for {name}: the checkpoint has "
                                       f"{src.shape}, the module {dst.shape}")
            _wick._param_assign_(dst, src)
        return _IncompatibleKeys(missing, unexpected)

    # ---- modes and gradients ----

    def train(self, mode=True):
        """train(mode=True)

        Training mode (Dropout drops) for this module and its descendants; returns self."""
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        """eval()

        train(False)."""
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        """requires_grad_(requires_grad=True)"""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none=True):
        """zero_grad(set_to_none=True)

        Drop every parameter's gradient (p.grad = None; wick keeps no zero-filled grads)."""
        for p in self.parameters():
            p.grad = None

    def apply(self, fn):
        """apply(fn)

        fn(module) for every descendant then this module; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """to(dtype=None, device=None)

        New parameters (and buffers) converted by Tensor.to(...); returns
        self. Optimizers made before hold the old ones."""
        for m in self.modules():
            for name, p in list(m._parameters.items()):
                if p is not None:
                    m._parameters[name] = Parameter(p.detach().to(*args, **kwargs), requires_grad=p.requires_grad)
            for name, b in list(m._buffers.items()):
                if b is not None:
                    m._buffers[name] = b.to(*args, **kwargs)
        return self

    def float(self):
        """float()

        to(dtype=wick.f32)."""
        return self.to(dtype="f32")

    def double(self):
        """double()

        to(dtype=wick.f64)."""
        return self.to(dtype="f64")

    def half(self):
        """half()

        to(dtype=wick.f16)."""
        return self.to(dtype="f16")

    def bfloat16(self):
        """bfloat16()

        to(dtype=wick.bf16)."""
        return self.to(dtype="bf16")

    def cpu(self):
        """cpu()

        to(device="cpu")."""
        return self.to(device="cpu")

    # ---- printing ----

    def extra_repr(self):
        """extra_repr()"""
        return ""

    def __repr__(self):
        lines = []
        for name, m in self._modules.items():
            sub = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {sub}")
        head = f"{type(self).__name__}({self.extra_repr()}"
        return head + ("\n" + "\n".join(lines) + "\n)" if lines else ")")


def _uniform(shape, bound, dtype, device):
    """U(-bound, bound) from the device's generator."""
    return _wick.rand(*shape, dtype=dtype, device=device) * (2.0 * bound) - bound


def _pair(v, what):
    if isinstance(v, int):
        return (v, v)
    v = tuple(v)
    if len(v) != 2:
        raise ValueError(f"{what} must be an int or a pair, got {v!r}")
    return v


# ---------------------------------------------------------------- layers


class Linear(Module):
    """Linear(in_features, out_features, bias=True, device=None, dtype=None)

    y = x @ weight^T + bias; weight (out, in) and bias (out) uniform in
    +-1/sqrt(in_features) (torch's kaiming-uniform default)."""

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        self.in_features, self.out_features = int(in_features), int(out_features)
        bound = 1.0 / math.sqrt(in_features) if in_features > 0 else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound, dtype, device))
        if bias:
            self.bias = Parameter(_uniform((out_features,), bound, dtype, device))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """Embedding(num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None)

    A table (num, dim) of N(0, 1) rows looked up by integer ids. padding_idx
    zeroes that row at initialisation (unlike torch, its gradient is not masked)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, device=None, dtype=None, _weight=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"padding_idx {padding_idx} must be within num_embeddings {num_embeddings}")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            w = _wick.randn(num_embeddings, embedding_dim, dtype=dtype, device=device)
            if padding_idx is not None:
                w[padding_idx] = 0.0
        else:
            w = _to_wick(_weight)
            if w.shape != (num_embeddings, embedding_dim):
                raise _wick.ShapeError(f"Embedding: _weight has shape {w.shape}, expected "
                                       f"{(num_embeddings, embedding_dim)}")
        self.weight = Parameter(w)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
        """from_pretrained(embeddings, freeze=True, padding_idx=None)"""
        e = _to_wick(embeddings)
        if e.ndim != 2:
            raise _wick.ShapeError(f"Embedding.from_pretrained: embeddings must be 2-D, got {e.shape}")
        m = cls(e.shape[0], e.shape[1], padding_idx=padding_idx, _weight=e)
        m.weight.requires_grad = not freeze
        return m

    def forward(self, input):
        return functional.embedding(input, self.weight)

    def extra_repr(self):
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


def _norm_shape(normalized_shape):
    return (int(normalized_shape),) if isinstance(normalized_shape, int) else tuple(int(d) for d in normalized_shape)


class LayerNorm(Module):
    """LayerNorm(normalized_shape, eps=1e-05, elementwise_affine=True, bias=True, device=None, dtype=None)

    (x - mean) / sqrt(var + eps) * weight + bias over the trailing dims
    normalized_shape names; weight ones, bias zeros."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _norm_shape(normalized_shape)
        self.eps, self.elementwise_affine = float(eps), bool(elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(_wick.ones(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(_wick.zeros(self.normalized_shape, dtype=dtype, device=device))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(Module):
    """RMSNorm(normalized_shape, eps=1e-06, elementwise_affine=True, device=None, dtype=None)

    x / sqrt(mean(x^2) + eps) * weight over the last dim (llama's; torch's
    RMSNorm with an explicit eps). normalized_shape: the last dim only."""

    def __init__(self, normalized_shape, eps=1e-6, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _norm_shape(normalized_shape)
        if len(self.normalized_shape) != 1:
            raise ValueError(f"RMSNorm: wick normalises over the last dim only; normalized_shape "
                             f"{self.normalized_shape} has {len(self.normalized_shape)} dims")
        self.eps, self.elementwise_affine = float(eps), bool(elementwise_affine)
        if elementwise_affine:
            self.weight = Parameter(_wick.ones(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def forward(self, input):
        return functional.rms_norm(input, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """GroupNorm(num_groups, num_channels, eps=1e-05, affine=True, device=None, dtype=None)

    Normalises (N, C, ...) over each group of channels; weight ones and bias
    zeros per channel."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels {num_channels} must be divisible by num_groups {num_groups}")
        self.num_groups, self.num_channels = int(num_groups), int(num_channels)
        self.eps, self.affine = float(eps), bool(affine)
        if affine:
            self.weight = Parameter(_wick.ones(num_channels, dtype=dtype, device=device))
            self.bias = Parameter(_wick.zeros(num_channels, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class _BatchNorm(Module):
    _ranks = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        self.num_features, self.eps, self.momentum = int(num_features), float(eps), momentum
        self.affine, self.track_running_stats = bool(affine), bool(track_running_stats)
        if affine:
            self.weight = Parameter(_wick.ones(num_features, dtype=dtype, device=device))
            self.bias = Parameter(_wick.zeros(num_features, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", _wick.zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", _wick.ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", _wick.zeros((), dtype="i64", device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input):
        if input.ndim not in self._ranks:
            raise ValueError(f"{type(self).__name__}: expected a rank in {self._ranks}, got input of shape {input.shape}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked += 1
            if self.momentum is None:  # a cumulative moving average, as torch's
                factor = 1.0 / int(self.num_batches_tracked)
        batch_stats = self.training or self.running_mean is None
        keep = not self.training or self.track_running_stats
        return functional.batch_norm(input, self.running_mean if keep else None, self.running_var if keep else None,
                                     self.weight, self.bias, batch_stats, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """BatchNorm1d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None)

    Per-channel normalisation of (N, C) or (N, C, L): batch statistics in
    training (updating the running ones), the running ones in eval()."""

    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """BatchNorm2d(num_features, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None)

    Per-channel normalisation of (N, C, H, W), as BatchNorm1d."""

    _ranks = (4,)


class Conv2d(Module):
    """Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True, device=None, dtype=None)

    2-D convolution over (N, C, H, W) (wick.conv2d); weight (out, in/groups,
    kh, kw) and bias uniform in +-1/sqrt(fan_in) (torch's default)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 device=None, dtype=None):
        super().__init__()
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise ValueError(f"Conv2d: in_channels {in_channels} and out_channels {out_channels} must be divisible "
                             f"by groups {groups}")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = _pair(kernel_size, "kernel_size")
        self.stride, self.padding = _pair(stride, "stride"), _pair(padding, "padding")
        self.dilation, self.groups = _pair(dilation, "dilation"), int(groups)
        fan_in = in_channels // groups * self.kernel_size[0] * self.kernel_size[1]
        bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
        self.weight = Parameter(_uniform((out_channels, in_channels // groups) + self.kernel_size, bound, dtype, device))
        if bias:
            self.bias = Parameter(_uniform((out_channels,), bound, dtype, device))
        else:
            self.register_parameter("bias", None)

    def forward(self, input):
        return functional.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, groups={self.groups}, bias={self.bias is not None}")


# ----------------------------------------------------------- activations


class Identity(Module):
    """Identity()"""

    def forward(self, input):
        return input


class ReLU(Module):
    """ReLU(inplace=False)"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return functional.relu(input, self.inplace)


class GELU(Module):
    """GELU(approximate='none')"""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return functional.gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """SiLU(inplace=False)"""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return functional.silu(input, self.inplace)


class Sigmoid(Module):
    """Sigmoid()"""

    def forward(self, input):
        return functional.sigmoid(input)


class Tanh(Module):
    """Tanh()"""

    def forward(self, input):
        return functional.tanh(input)


class Softmax(Module):
    """Softmax(dim)"""

    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return functional.softmax(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """LogSoftmax(dim)"""

    def forward(self, input):
        return functional.log_softmax(input, self.dim)


class Flatten(Module):
    """Flatten(start_dim=1, end_dim=-1)"""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)


class Dropout(Module):
    """Dropout(p=0.5, inplace=False)

    In training mode zeroes each element with probability p and scales the
    rest by 1/(1-p) (wick.rand: the device's generator); identity in eval()."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p, self.inplace = float(p), bool(inplace)

    def forward(self, input):
        return functional.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


# ------------------------------------------------------------ containers


class Sequential(Module):
    """Sequential(*modules)

    Calls its modules in order; also Sequential(OrderedDict(name=module))."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], collections.OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, idx):
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(collections.OrderedDict(items[idx]))
        return items[idx][1]

    def append(self, module):
        """append(module)"""
        self.add_module(str(len(self)), module)
        return self

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


class ModuleList(Module):
    """ModuleList(modules=None)

    A list of modules, registered (their parameters are the list's)."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def _index(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"index {idx} is out of range for a ModuleList of {n}")
        return str(idx % n)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ModuleList(list(self._modules.values())[idx])
        return self._modules[self._index(idx)]

    def __setitem__(self, idx, module):
        self.add_module(self._index(idx), module)

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        """append(module)"""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        """extend(modules)"""
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        """insert(index, module)"""
        ms = list(self._modules.values())
        ms.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(ms):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """ModuleDict(modules=None)

    A dict of modules, registered under their keys."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        """keys()"""
        return self._modules.keys()

    def items(self):
        """items()"""
        return self._modules.items()

    def values(self):
        """values()"""
        return self._modules.values()

    def update(self, modules):
        """update(modules)"""
        for k, m in (modules.items() if hasattr(modules, "items") else modules):
            self.add_module(k, m)


# ---------------------------------------------------------------- losses


class _Loss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def extra_repr(self):
        return f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """MSELoss(reduction='mean')"""

    def forward(self, input, target):
        return functional.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """L1Loss(reduction='mean')"""

    def forward(self, input, target):
        return functional.l1_loss(input, target, reduction=self.reduction)


class HuberLoss(_Loss):
    """HuberLoss(reduction='mean', delta=1.0)"""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction)
        self.delta = float(delta)

    def forward(self, input, target):
        return functional.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class SmoothL1Loss(_Loss):
    """SmoothL1Loss(reduction='mean', beta=1.0)"""

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction)
        self.beta = float(beta)

    def forward(self, input, target):
        return functional.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class BCELoss(_Loss):
    """BCELoss(weight=None, reduction='mean')"""

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)

    def forward(self, input, target):
        return functional.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """BCEWithLogitsLoss(weight=None, reduction='mean', pos_weight=None)"""

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return functional.binary_cross_entropy_with_logits(input, target, weight=self.weight,
                                                           reduction=self.reduction, pos_weight=self.pos_weight)


class KLDivLoss(Module):
    """KLDivLoss(reduction='mean', log_target=False)"""

    def __init__(self, reduction="mean", log_target=False):
        super().__init__()
        if reduction not in ("mean", "sum", "none", "batchmean"):
            raise ValueError(f"reduction must be 'mean', 'sum', 'none' or 'batchmean', got {reduction!r}")
        self.reduction, self.log_target = reduction, bool(log_target)

    def forward(self, input, target):
        return functional.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CrossEntropyLoss(_Loss):
    """CrossEntropyLoss(weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0)"""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index, self.label_smoothing = int(ignore_index), float(label_smoothing)

    def forward(self, input, target):
        return functional.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                        reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """NLLLoss(weight=None, ignore_index=-100, reduction='mean')"""

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_buffer("weight", weight)
        self.ignore_index = int(ignore_index)

    def forward(self, input, target):
        return functional.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                   reduction=self.reduction)
