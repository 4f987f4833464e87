"""wick: a tensor library in C11, from Python.

Every wick error becomes an exception of a class per status (wick.ShapeError,
wick.DTypeError, ...), all subclasses of wick.Error and of the built-in a
Python user would catch (ValueError, IndexError, MemoryError, ...).
"""
from ._wick import *  # noqa: F401,F403
from ._wick import __version__, Tensor, Error  # noqa: F401

# ---- py_nn: the module layer (wick.nn, wick.nn.functional) ----
from . import functional, nn  # noqa: E402,F401
# ---- py_autograd: wick.autograd, wick.optim (no_grad & co., clip_grad_norm_,
# save_checkpoint / load_checkpoint come with the star import above) ----
from . import autograd, optim  # noqa: E402,F401
# ---- py_dist: wick.distributed (torch.distributed's collectives and DDP) ----
from . import distributed  # noqa: E402,F401
