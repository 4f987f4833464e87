"""wick.nn: a torch-shaped module layer over wick's ops.

Modules hold Parameters (leaf tensors that require grad) and submodules,
registered by assignment as in torch (self.fc = Linear(4, 2)); parameters(),
named_parameters(), state_dict() / load_state_dict(), train() / eval(),
zero_grad() and module(x) -> forward(x) behave as torch's. The computation
is wick's: wick.nn.functional (python/wick/functional.py) over the C ops of
python/src/py_nn.c and the other parts of the binding. Initialisation follows
torch's defaults (kaiming-uniform Linear / Conv2d weights from wick.rand,
N(0, 1) embeddings), drawn from the device's generator (wick.manual_seed).

Parameters are plain wick.Tensor objects (the C type is not subclassable):
Parameter(t) returns a new leaf that requires grad, and
isinstance(p, Parameter) is true for the tensors Parameter made.
"""
import sys

from . import functional
from . import nn_init as init
from . import nn_layers, nn_module
from .nn_layers import *  # noqa: F401,F403
from .nn_module import *  # noqa: F401,F403
from .nn_module import _parameters  # noqa: F401  (the Parameter registry, for tests)

# `import wick.nn.functional as F` / `wick.nn.init` find the modules here (nn is a module, not a package)
sys.modules[__name__ + ".functional"] = functional
sys.modules[__name__ + ".init"] = init

__all__ = sorted(nn_module.__all__ + nn_layers.__all__) + ["functional", "init"]

# wick.nn.utils.clip_grad_norm_ (torch's spelling of wick.clip_grad_norm_)
import types as _types  # noqa: E402

from . import _wick  # noqa: E402

utils = _types.ModuleType(__name__ + ".utils", "torch.nn.utils's helpers that wick has.")
utils.clip_grad_norm_ = _wick.clip_grad_norm_
sys.modules[utils.__name__] = utils
