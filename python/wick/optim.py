"""wick.optim: torch.optim's SGD, Adam and AdamW over wick's optimizers
(C types: python/src/py_optim.c, include/wick/train.h).

An optimizer keeps references to its parameters (leaf Tensors that require
grad, float, contiguous), reads their ``.grad`` in ``step()`` (in place, the
GIL released) and drops them in ``zero_grad()``. ``lr`` is settable (for
schedules), ``steps`` counts the steps taken. Parameter groups are not
supported: one learning rate per optimizer.
"""
from ._wick import _Adam as Adam  # noqa: F401
from ._wick import _AdamW as AdamW  # noqa: F401
from ._wick import _Optimizer as Optimizer  # noqa: F401
from ._wick import _SGD as SGD  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
