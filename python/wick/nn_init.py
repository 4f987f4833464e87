"""wick.nn.init: torch.nn.init's initialisers, in place on a tensor.

Each fills its tensor from the device's generator (wick.manual_seed) and
returns it; the values are written unrecorded (autograd does not see the
fill, as under torch's no_grad), so parameters stay leaves. Float tensors.
"""
import math

from . import _wick

__all__ = [
    "calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_", "uniform_",
    "xavier_normal_", "xavier_uniform_", "zeros_",
]


def _fill(tensor, values):
    return _wick._param_assign_(tensor, values)


def _like(tensor):
    return dict(dtype=tensor.dtype, device=tensor.device)


def calculate_gain(nonlinearity, param=None):
    """calculate_gain(nonlinearity, param=None)

    torch's recommended gain for a nonlinearity."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
              "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def _fans(tensor):
    if tensor.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor of at least 2 dims, got shape {tensor.shape}")
    receptive = 1
    for d in tensor.shape[2:]:
        receptive *= d
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def uniform_(tensor, a=0.0, b=1.0):
    """uniform_(tensor, a=0.0, b=1.0)

    U(a, b)."""
    return _fill(tensor, _wick.rand(*tensor.shape, **_like(tensor)) * float(b - a) + float(a))


def normal_(tensor, mean=0.0, std=1.0):
    """normal_(tensor, mean=0.0, std=1.0)

    N(mean, std^2)."""
    return _fill(tensor, _wick.randn(*tensor.shape, **_like(tensor)) * float(std) + float(mean))


def constant_(tensor, val):
    """constant_(tensor, val)"""
    return _fill(tensor, _wick.full(tensor.shape, float(val), **_like(tensor)))


def zeros_(tensor):
    """zeros_(tensor)"""
    return constant_(tensor, 0.0)


def ones_(tensor):
    """ones_(tensor)"""
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain=1.0):
    """xavier_uniform_(tensor, gain=1.0)

    U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    a = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -a, a)


def xavier_normal_(tensor, gain=1.0):
    """xavier_normal_(tensor, gain=1.0)

    N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor, a, mode, nonlinearity):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """kaiming_uniform_(tensor, a=0, mode='fan_in', nonlinearity='leaky_relu')

    U(-b, b) with b = gain * sqrt(3 / fan) (He et al.)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """kaiming_normal_(tensor, a=0, mode='fan_in', nonlinearity='leaky_relu')

    N(0, std^2) with std = gain / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity))
