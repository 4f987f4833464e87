"""The layers of wick.nn (Linear, Embedding, the norms, Conv2d,
activations, Dropout) and the loss modules, over wick.nn.functional.
Initialisation follows torch's defaults (kaiming-uniform Linear / Conv2d
weights from wick.rand, N(0, 1) embeddings) from the device's generator
(wick.manual_seed). wick.nn re-exports every name.
"""
import math

from . import _wick
from . import functional
from .nn_module import Module, Parameter, _to_wick

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "BatchNorm1d", "BatchNorm2d", "Conv2d", "CrossEntropyLoss", "Dropout",
    "Embedding", "Flatten", "GELU", "GroupNorm", "HuberLoss", "Identity", "KLDivLoss", "L1Loss", "LayerNorm",
    "Linear", "LogSoftmax", "MSELoss", "NLLLoss", "RMSNorm", "ReLU", "SiLU", "Sigmoid", "SmoothL1Loss", "Softmax",
    "Tanh",
]

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
