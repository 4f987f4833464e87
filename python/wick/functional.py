"""wick.nn.functional: torch.nn.functional's names over wick's ops.

The nn ops and losses are C functions of wick._wick (python/src/nn.c),
re-exported here. Activations are the elementwise part's Tensor methods,
spelled as torch spells them: gelu(approximate="none") is the exact erf
form (t.gelu_erf()), "tanh" the tanh approximation (t.gelu()). Ops owned by
other parts of the binding (embedding, conv2d, pooling, pad) are looked up
by name when called, so this module imports whatever the build has.
"""
from . import _wick
from ._wick import (  # noqa: F401
    attention,
    batch_norm,
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cross_entropy,
    dropout,
    group_norm,
    huber_loss,
    kl_div,
    l1_loss,
    layer_norm,
    linear,
    log_softmax,
    mse_loss,
    nll_loss,
    rms_norm,
    rope,
    rope_thd,
    scaled_dot_product_attention,
    smooth_l1_loss,
    softmax,
    swiglu,
)

__all__ = [
    "attention", "avg_pool2d", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "conv1d", "conv2d",
    "cross_entropy", "dropout", "elu", "embedding", "gelu", "group_norm", "huber_loss", "kl_div", "l1_loss", "layer_norm", "leaky_relu",
    "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "pad", "relu", "rms_norm", "rope", "rope_thd",
    "scaled_dot_product_attention", "sigmoid", "silu", "smooth_l1_loss", "softmax", "swiglu", "tanh",
]


def _inplace(input, result):
    """torch's inplace=True: the result written into input, input returned."""
    input.copy_(result)
    return input


def relu(input, inplace=False):
    """relu(input, inplace=False)

    max(x, 0)."""
    r = input.relu()
    return _inplace(input, r) if inplace else r


def gelu(input, approximate="none"):
    """gelu(input, approximate='none')

    torch's GELU: 'none' is x * Phi(x) with the erf (t.gelu_erf()), 'tanh' the
    tanh approximation (t.gelu())."""
    if approximate == "none":
        return input.gelu_erf()
    if approximate == "tanh":
        return input.gelu()
    raise ValueError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")


def silu(input, inplace=False):
    """silu(input, inplace=False)

    x * sigmoid(x)."""
    r = input.silu()
    return _inplace(input, r) if inplace else r


def sigmoid(input):
    """sigmoid(input)

    1 / (1 + exp(-x))."""
    return input.sigmoid()


def tanh(input):
    """tanh(input)

    The hyperbolic tangent."""
    return input.tanh()


def elu(input, alpha=1.0, inplace=False):
    """elu(input, alpha=1.0, inplace=False)

    x where x > 0, else alpha * (exp(x) - 1)."""
    r = input.elu(alpha)
    return _inplace(input, r) if inplace else r


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """leaky_relu(input, negative_slope=0.01, inplace=False)

    x where x > 0, else negative_slope * x (relu(x) - slope * relu(-x), so
    autograd needs nothing new)."""
    r = input.relu() - (-input).relu() * float(negative_slope)
    return _inplace(input, r) if inplace else r


def embedding(input, weight):
    """embedding(input, weight)

    Rows of weight (num, dim) at the ids input: shape input.shape + (dim,)."""
    return _wick.embedding(input, weight)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)

    torch's conv1d (wick.conv1d)."""
    return _wick.conv1d(input, weight, bias, stride, padding, dilation, groups)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)

    torch's conv2d (wick.conv2d)."""
    return _wick.conv2d(input, weight, bias, stride, padding, dilation, groups)


def max_pool2d(input, kernel_size, stride=None, padding=0):
    """max_pool2d(input, kernel_size, stride=None, padding=0)

    torch's max_pool2d (wick.max_pool2d)."""
    return _wick.max_pool2d(input, kernel_size, stride, padding)


def avg_pool2d(input, kernel_size, stride=None, padding=0):
    """avg_pool2d(input, kernel_size, stride=None, padding=0)

    torch's avg_pool2d (wick.avg_pool2d)."""
    return _wick.avg_pool2d(input, kernel_size, stride, padding)


def pad(input, pad, mode="constant", value=0.0):
    """pad(input, pad, mode='constant', value=0.0)

    torch's pad (wick.pad): pairs of (left, right) from the last dim."""
    return _wick.pad(input, pad, mode, value)
