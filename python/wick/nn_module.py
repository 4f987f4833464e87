"""The module machinery of wick.nn: Parameter, Module and the containers
(Sequential, ModuleList, ModuleDict). wick.nn re-exports every name.

Parameters are plain wick.Tensor objects (the C type is not subclassable):
Parameter(t) returns a new leaf that requires grad, and
isinstance(p, Parameter) is true for the tensors Parameter made.
"""
import collections
import weakref

from . import _wick
from ._wick import Tensor

__all__ = ["Module", "ModuleDict", "ModuleList", "Parameter", "Sequential"]

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
