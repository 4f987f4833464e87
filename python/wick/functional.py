"""wick.nn.functional: torch.nn.functional's names over wick's ops.

The nn ops and losses are C functions of wick._wick (python/src/py_nn.c),
re-exported here. Activations are the elementwise part's Tensor methods,
spelled as torch spells them: gelu(approximate="none") is the exact erf
form (t.gelu_erf()), "tanh" the tanh approximation (t.gelu()). Ops other parts
of the binding provide with torch's signatures (embedding, conv1d / conv2d,
pooling, interpolate, pad) are those C functions themselves where the build
has them; without them, using the name raises an AttributeError saying so.
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
    "attention", "batch_norm", "binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy", "dropout",
    "elu", "gelu", "group_norm", "huber_loss", "kl_div", "l1_loss", "layer_norm", "leaky_relu", "linear",
    "log_softmax", "mse_loss", "nll_loss", "relu", "rms_norm", "rope", "rope_thd", "scaled_dot_product_attention",
    "sigmoid", "silu", "smooth_l1_loss", "softmax", "swiglu", "tanh",
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


# Ops other parts of the binding provide with torch's signatures already: the
# C functions themselves, where this build has them.
_FORWARDED = ("embedding", "conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d",
              "avg_pool1d", "avg_pool2d", "interpolate", "upsample", "pad", "one_hot")
for _name in _FORWARDED:
    if hasattr(_wick, _name):
        globals()[_name] = getattr(_wick, _name)
        __all__.append(_name)
del _name


def __getattr__(name):
    if name in _FORWARDED:
        raise AttributeError(f"wick.nn.functional.{name} needs wick.{name}, which this build of wick does not have")
    raise AttributeError(f"module 'wick.nn.functional' has no attribute '{name}'")
