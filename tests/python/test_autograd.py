"""Autograd from Python (python/src/autograd.c): backward and .grad over the
process-wide store, grad modes, wick.autograd.grad, against torch's autograd.

The expressions use only the foundation's operators (+ - * / ** @ abs, basic
indexing) so that this file tests autograd alone; `total` reduces a matrix
to a 0-d tensor with two matmuls."""
import threading

import pytest

import wick
from wick._wick import _grad_store_count

F64 = {"f32": 1e-5, "f64": 1e-12}


def total(t):
    """The sum of a 2-D tensor's elements, 0-d (through @ and indexing)."""
    r, c = t.shape
    return (wick.ones(1, r, dtype=t.dtype) @ t @ wick.ones(c, 1, dtype=t.dtype))[0, 0]


def values(shape, seed, dt):
    wick.manual_seed(seed)
    return wick.randn(*shape, dtype=dt)


def leaf(t):
    """A new leaf that requires grad, holding t's values."""
    return wick.tensor(t, dtype=t.dtype).requires_grad_()


def as_torch(torch, t, requires_grad=False):
    dt = {"f32": torch.float32, "f64": torch.float64, "bf16": torch.bfloat16, "f16": torch.float16}[str(t.dtype)]
    return torch.tensor(t.tolist(), dtype=dt, requires_grad=requires_grad)


def close(np, w, ref, tol):
    a = np.array(w.tolist(), dtype=np.float64)
    b = ref.detach().double().numpy()
    assert a.shape == b.shape
    assert np.allclose(a, b, rtol=tol, atol=tol), (a, b)


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_mlp_gradients_match_torch(np, torch, dt):
    """A two-layer MLP (a transposed weight, a broadcast bias, |h| and h*h as
    nonlinearities) and a squared-error loss: every gradient matches torch's."""
    x = values((5, 4), 1, dt)
    w1, b1, w2 = leaf(values((3, 4), 2, dt)), leaf(values((3,), 3, dt)), leaf(values((3, 2), 4, dt))
    target = values((5, 2), 5, dt)
    xt = x.T  # non-contiguous input: (4, 5) -> used as x = xt.T
    h = abs(xt.T @ w1.T + b1)
    out = (h * h) @ w2 / 3.0 - 1.0
    loss = total((out - target) ** 2) * 0.5
    loss.backward()

    tx, tt = as_torch(torch, x), as_torch(torch, target)
    tw1, tb1, tw2 = (as_torch(torch, p, True) for p in (w1, b1, w2))
    th = (tx @ tw1.T + tb1).abs()
    tl = (((th * th) @ tw2 / 3.0 - 1.0 - tt) ** 2).sum() * 0.5
    tl.backward()
    close(np, loss, tl, F64[dt])
    for p, tp in ((w1, tw1), (b1, tb1), (w2, tw2)):
        assert p.grad is not None and p.grad.shape == p.shape and p.grad.dtype is p.dtype
        close(np, p.grad, tp.grad, F64[dt] * 10)


def test_composite_expression_matches_torch(np, torch):
    a, b = leaf(values((3, 3), 7, "f64")), leaf(values((3, 1), 8, "f64"))
    y = total((a / (b * b + 1)) ** 2 - 3 * a + abs(b) - 2 / (a * a + 4) + (-a) * b)
    y.backward()
    ta, tb = as_torch(torch, a, True), as_torch(torch, b, True)
    ((ta / (tb * tb + 1)) ** 2 - 3 * ta + tb.abs() - 2 / (ta * ta + 4) + (-ta) * tb).sum().backward()
    close(np, a.grad, ta.grad, 1e-12)
    close(np, b.grad, tb.grad, 1e-12)


@pytest.mark.parametrize("dt", ["bf16", "f16"])
def test_half_precision_gradients(np, torch, dt):
    x = leaf(values((2, 3), 9, dt))
    (x * x * 3 + x).backward(wick.ones(2, 3, dtype=dt))
    assert x.grad.dtype is x.dtype
    tx = as_torch(torch, x).double().requires_grad_()
    (tx * tx * 3 + tx).backward(torch.ones(2, 3, dtype=torch.float64))
    close(np, x.grad, tx.grad, 3e-2)


def test_accumulates_over_backward_calls(np):
    x = wick.tensor([1.0, -2.0, 3.0], requires_grad=True)
    g = wick.ones(3)
    (x * x).backward(g)
    (x * 3).backward(g)
    assert x.grad.tolist() == [2 + 3, -4 + 3, 6 + 3]
    x.grad = None
    assert x.grad is None
    (x * 3).backward(g)
    assert x.grad.tolist() == [3, 3, 3]


def test_retain_graph():
    x = wick.tensor([[2.0]], requires_grad=True)
    y = x * x * x
    y.backward(retain_graph=True)
    y.backward()  # the second pass is allowed: the first kept the graph
    assert x.grad.tolist() == [[24.0]]
    with pytest.raises(wick.ArgError, match="keep_graph"):
        y.backward()  # the second pass freed it
    # create_graph implies keeping it
    z = x * x
    z.backward(create_graph=True)
    z.backward()
    assert x.grad.tolist() == [[24.0 + 8.0]]


def test_second_derivative_matches_torch(np, torch):
    xs = [0.5, -1.5, 2.0]
    x = wick.tensor(xs, dtype="f64", requires_grad=True)
    y = x * x * x * 2 + x * x
    (g,) = wick.autograd.grad(y, x, grad_outputs=wick.ones(3, dtype="f64"), create_graph=True)
    assert g.requires_grad and x.grad is None  # grad() leaves .grad alone
    g.backward(wick.ones(3, dtype="f64"))
    tx = torch.tensor(xs, dtype=torch.float64, requires_grad=True)
    ty = tx * tx * tx * 2 + tx * tx
    (tg,) = torch.autograd.grad(ty, tx, torch.ones(3, dtype=torch.float64), create_graph=True)
    tg.backward(torch.ones(3, dtype=torch.float64))
    close(np, g, tg, 1e-12)
    close(np, x.grad, tx.grad, 1e-12)  # 12x + 2
    # the same through backward(create_graph=True): .grad itself is tracked
    x2 = wick.tensor(xs, dtype="f64", requires_grad=True)
    (x2 * x2 * x2).backward(wick.ones(3, dtype="f64"), create_graph=True)
    g2 = x2.grad
    assert g2.requires_grad
    (h,) = wick.autograd.grad(g2, x2, wick.ones(3, dtype="f64"))
    assert np.allclose(h.tolist(), [6 * v for v in xs])


def test_autograd_grad(np, torch):
    a, b = leaf(values((2, 2), 11, "f64")), leaf(values((2, 2), 12, "f64"))
    c = leaf(values((2, 2), 13, "f64"))  # unused: zeros (torch would need allow_unused)
    y1, y2 = a * b, a * a
    go = values((2, 2), 14, "f64")
    ga, gb, gc = wick.autograd.grad([y1, y2], [a, b, c], grad_outputs=[go, go])
    ta, tb = as_torch(torch, a, True), as_torch(torch, b, True)
    tgo = as_torch(torch, go)
    tga, tgb = torch.autograd.grad([ta * tb, ta * ta], [ta, tb], [tgo, tgo])
    close(np, ga, tga, 1e-12)
    close(np, gb, tgb, 1e-12)
    assert gc.tolist() == [[0, 0], [0, 0]]
    assert a.grad is None and b.grad is None
    # one tensor (not a list) works both ways; a scalar output needs no grad_outputs
    (gs,) = wick.autograd.grad(total(a * 2), a)
    assert gs.tolist() == [[2, 2], [2, 2]]
    with pytest.raises(ValueError, match="grad_outputs"):
        wick.autograd.grad([y1, y2], a, grad_outputs=[go])
    with pytest.raises(TypeError):
        wick.autograd.grad(y1, [a, 3])
    with pytest.raises(TypeError):
        wick.autograd.grad("y", a)


def test_autograd_backward_function():
    x = wick.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    wick.autograd.backward([y, x * 4], [wick.ones(2), wick.ones(2)])
    assert x.grad.tolist() == [2 + 4, 4 + 4]
    with pytest.raises(ValueError):
        wick.autograd.backward([y], [])


def test_no_grad_context_decorator_nested():
    x = wick.tensor([1.0], requires_grad=True)
    assert wick.is_grad_enabled()
    with wick.no_grad():
        assert not wick.is_grad_enabled() and not (x * 2).requires_grad
        with wick.no_grad():
            assert not wick.is_grad_enabled()
        assert not wick.is_grad_enabled()  # still off after the inner one
        with wick.enable_grad():
            assert wick.is_grad_enabled() and (x * 2).requires_grad
        assert not wick.is_grad_enabled()
    assert wick.is_grad_enabled() and (x * 2).requires_grad

    @wick.no_grad()
    def double(t):
        """Doubles."""
        return t * 2, wick.is_grad_enabled()

    r, mode = double(x)
    assert not mode and not r.requires_grad and wick.is_grad_enabled()
    assert double.__name__ == "double" and double.__doc__ == "Doubles."

    class M:
        @wick.enable_grad()
        def f(self, t):
            return (t * 2).requires_grad

    with wick.no_grad():
        assert M().f(x)  # a method, bound, under enable_grad
        assert not wick.is_grad_enabled()

    @wick.no_grad  # the bare form (torch 2's) works too
    def bare(t):
        return (t * 2).requires_grad

    assert bare(x) is False and bare.__name__ == "bare" and wick.is_grad_enabled()

    # an exception inside restores the mode
    with pytest.raises(RuntimeError):
        with wick.no_grad():
            raise RuntimeError("inside")
    assert wick.is_grad_enabled()
    with pytest.raises(TypeError):
        wick.no_grad(1)


def test_set_grad_enabled():
    wick.set_grad_enabled(False)
    try:
        assert not wick.is_grad_enabled()
    finally:
        wick.set_grad_enabled(True)
    assert wick.is_grad_enabled()
    with wick.set_grad_enabled(False):
        assert not wick.is_grad_enabled()
        with wick.set_grad_enabled(True):
            assert wick.is_grad_enabled()
        assert not wick.is_grad_enabled()
    assert wick.is_grad_enabled()

    @wick.set_grad_enabled(False)
    def f():
        return wick.is_grad_enabled()

    assert wick.is_grad_enabled()  # decorating does not change the mode now
    assert f() is False and wick.is_grad_enabled()


def test_grad_mode_is_per_thread():
    seen = []
    with wick.no_grad():
        t = threading.Thread(target=lambda: seen.append(wick.is_grad_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_grad_property_set_and_errors():
    x = wick.tensor([1.0, 2.0], requires_grad=True)
    x.grad = wick.tensor([5.0, 6.0])
    assert x.grad.tolist() == [5, 6]
    (x * 1).backward(wick.ones(2))  # adds to the assigned gradient
    assert x.grad.tolist() == [6, 7]
    with pytest.raises(wick.ShapeError):
        x.grad = wick.zeros(3)
    with pytest.raises(wick.Error):
        x.grad = wick.zeros(2, dtype="f64")
    with pytest.raises(TypeError):
        x.grad = [1.0, 2.0]
    with pytest.raises(AttributeError):
        del x.grad
    u = wick.tensor([1.0])
    assert u.grad is None
    u.grad = None  # nothing to drop
    with pytest.raises(wick.ArgError):
        u.grad = wick.tensor([1.0])  # wick keeps gradients of tracked tensors only


def test_tracking_properties():
    x = wick.zeros(2, requires_grad=True)
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    y = x * 2
    assert not y.is_leaf and y.requires_grad and isinstance(y.grad_fn, str)
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    d[0] = 5.0  # shares memory with y
    assert y.tolist() == [5, 0]
    u = wick.ones(2)
    assert u.requires_grad_() is u and u.requires_grad
    u.requires_grad_(False)
    assert not u.requires_grad
    assert y.requires_grad_() is y  # on: a no-op for a tracked non-leaf
    with pytest.raises(wick.ArgError):
        y.requires_grad_(False)
    with pytest.raises(wick.DTypeError):
        wick.arange(3).requires_grad_()
    # retain_grad: a non-leaf's gradient is kept
    z = x * 3
    w = z * z
    z.retain_grad()
    x.retain_grad()  # a leaf: a no-op
    w.backward(wick.ones(2))
    assert z.grad.tolist() == [0, 0] and x.grad.tolist() == [0, 0]
    assert (w * 1).grad is None


def test_backward_errors():
    x = wick.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(wick.ShapeError):
        (x * 2).backward()  # two elements: a gradient is needed
    with pytest.raises(wick.ShapeError):
        (x * 2).backward(wick.ones(3))
    with pytest.raises(wick.ArgError):
        wick.ones(2).backward(wick.ones(2))  # not tracked
    with pytest.raises(TypeError):
        (x * 2).backward(wick.ones(2), colour=1)
    with pytest.raises(TypeError):
        (x * 2).backward(object())
    # a list / number as gradient works
    (x * 2).backward([1.0, 1.0])
    assert x.grad.tolist() == [2, 2]
    with wick.no_grad():
        assert not (x * 2).requires_grad


def test_inplace_on_leaf_refused():
    x = wick.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(wick.ArgError, match="in-place"):
        x += 1
    with pytest.raises(wick.ArgError):
        x[0] = 3.0
    with wick.no_grad():
        x += 1  # parameter updates: in a no-grad region
    assert x.tolist() == [2, 3] and x.requires_grad


def test_saved_value_modified_in_place_detected():
    x = wick.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a  # saves a
    with wick.no_grad():
        a += 1
    with pytest.raises(wick.ArgError):
        b.backward(wick.ones(2))


def test_empty_and_one_element():
    x = wick.zeros(0, 3, requires_grad=True)
    (x * 2).backward(wick.zeros(0, 3))
    assert x.grad.shape == (0, 3)
    s = wick.tensor([[3.0]], requires_grad=True)
    (s * s).backward()  # one element: implicit gradient 1
    assert s.grad.tolist() == [[6.0]]
    z = wick.tensor(2.0, requires_grad=True)
    (z * z * z).backward()
    assert z.grad.item() == 12.0


def test_threads_backward_sharing_a_parameter(np):
    """Threads each run backward over their own graph on one shared leaf at
    once (the GIL released during the pass): the gradient is the sum."""
    w = wick.tensor(values((8, 8), 21, "f64"), requires_grad=True)
    nthreads, reps = 4, 25
    xs = [values((8, 8), 30 + i, "f64") for i in range(nthreads)]
    errors = []

    def run(i):
        try:
            for _ in range(reps):
                total((w @ xs[i]) * (i + 1)).backward()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(nthreads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    # d/dw sum((w @ x) * k) = k * ones @ x^T
    want = sum(reps * (i + 1) * np.ones((8, 8)) @ np.array(xs[i].tolist()).T for i in range(nthreads))
    assert np.allclose(np.array(w.grad.tolist()), want, rtol=1e-12, atol=1e-9)


def test_grad_reader_while_other_thread_runs_backward():
    w = wick.ones(64, 64, requires_grad=True)
    stop = threading.Event()
    reads = []

    def reader():
        while not stop.is_set():
            g = w.grad
            reads.append(g is None or g.shape == (64, 64))

    t = threading.Thread(target=reader)
    t.start()
    try:
        for _ in range(20):
            total(w @ w).backward()
    finally:
        stop.set()
        t.join()
    assert reads and all(reads)


def test_dead_leaves_leave_the_store(rss):
    """The leaf-dealloc hook: a loop making fresh leaves, running backward and
    dropping them keeps the store and the RSS flat (100 k iterations)."""
    g = wick.ones(4)
    base = _grad_store_count()
    for _ in range(2000):  # warm-up: allocator pools
        x = wick.ones(4, requires_grad=True)
        (x * x).backward(g)
    del x
    assert _grad_store_count() == base
    before = rss()
    for _ in range(100_000):
        x = wick.ones(4, requires_grad=True)
        (x * x).backward(g)
        x.grad  # a wrapper of the store's tensor, dropped at once
    assert _grad_store_count() == base + 1  # only the live x
    del x
    assert _grad_store_count() == base
    assert rss() - before < 4.0
    # leaves that die before the backward reaching them (made inside a
    # function that returns only the loss): swept by the store's prune
    def loss():
        w = wick.ones(4, requires_grad=True)
        return w * w

    before = rss()
    for _ in range(100_000):
        loss().backward(g)
    assert _grad_store_count() < base + 2100  # bounded: a prune when it doubles
    assert rss() - before < 4.0
    # a leaf still referenced elsewhere keeps its gradient: two wrappers of one
    # wk_tensor (as_tensor shares it)
    p = wick.ones(2, requires_grad=True)
    q = wick.as_tensor(p)
    (p * 2).backward(wick.ones(2))
    del p
    assert q.grad.tolist() == [2, 2]


REENTRY = r"""
import numpy as np, wick
leaf = wick.ones(3, requires_grad=True)
(leaf * 2).backward(wick.ones(3))          # leaf has a gradient in the store
arr = np.asarray(leaf)                     # numpy's array keeps the Tensor alive (its base)
x = wick.from_numpy(arr)                   # wick keeps the array alive
w = wick.ones(3, requires_grad=True)
y = w * x                                  # the graph saves x
del leaf, arr, x
# backward frees the saved x with the store locked and the GIL released: the
# release takes the GIL, drops the array, which drops the leaf's Tensor, whose
# dealloc hook must not wait for the lock its own thread holds
y.backward(wick.ones(3))
print("ok", w.grad.tolist())
"""


def test_release_inside_backward_does_not_deadlock():
    import subprocess
    import sys

    pytest.importorskip("numpy")
    r = subprocess.run([sys.executable, "-c", REENTRY], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok [1.0, 1.0, 1.0]"


def signature_ok(obj, name):
    """The doc's first line is a Python signature of name (the stub generator reads it)."""
    first = getattr(obj, name).__doc__.split("\n")[0]
    assert first.startswith(name + "("), (name, first)
    compile(f"def {first}: pass", "<doc>", "exec")


def test_docstrings_are_signatures():
    for n in ("backward", "requires_grad_", "detach", "retain_grad"):
        signature_ok(wick.Tensor, n)
    for n in ("no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled"):
        signature_ok(wick, n)
    signature_ok(wick.autograd, "grad")
    signature_ok(wick.autograd, "backward")
