"""wick.autograd: PyTorch's autograd surface over wick's (C: python/src/autograd.c).

Gradients live in one process-wide store that ``Tensor.grad`` reads and
``Tensor.backward`` adds to, as in torch; ``grad`` computes gradients without
touching it. Grad mode (``no_grad``, ``enable_grad``, ``set_grad_enabled``) is
per thread.
"""
from ._wick import _autograd_grad as grad  # noqa: F401
from ._wick import enable_grad, is_grad_enabled, no_grad, set_grad_enabled  # noqa: F401

__all__ = ["backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False):
    """backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False)

    ``t.backward(g)`` for each tensor of ``tensors`` (one Tensor or a sequence),
    its gradients summed into the leaves' ``.grad``. Several tensors over one
    graph: the graph is kept for all but the last one.
    """
    from ._wick import Tensor

    ts = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None:
        gs = [None] * len(ts)
    elif isinstance(grad_tensors, Tensor):
        gs = [grad_tensors]
    else:
        gs = list(grad_tensors)
    if len(gs) != len(ts):
        raise ValueError(f"backward(): {len(gs)} grad_tensors for {len(ts)} tensors")
    keep = create_graph if retain_graph is None else retain_graph
    for i, (t, g) in enumerate(zip(ts, gs)):
        t.backward(g, retain_graph=keep or i + 1 < len(ts), create_graph=create_graph)
