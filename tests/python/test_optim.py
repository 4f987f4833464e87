"""Optimizers, gradient clipping and checkpoints from Python
(python/src/py_optim.c) against torch.optim / torch.nn.utils."""
import pytest

import wick


def total(t):
    r, c = t.shape
    return (wick.ones(1, r, dtype=t.dtype) @ t @ wick.ones(c, 1, dtype=t.dtype))[0, 0]


def values(shape, seed, dt="f64"):
    wick.manual_seed(seed)
    return wick.randn(*shape, dtype=dt)


TORCH_DT = {"f32": "float32", "f64": "float64"}


def problem(dt):
    """Parameters w (3, 4), b (3,) and an unused u; the data x (4, 5), y (3, 5)."""
    w = wick.tensor(values((3, 4), 1, dt), dtype=dt).requires_grad_()
    b = wick.tensor(values((3,), 2, dt), dtype=dt).requires_grad_()
    u = wick.tensor(values((2,), 3, dt), dtype=dt).requires_grad_()
    return [w, b, u], values((4, 5), 4, dt), values((3, 5), 5, dt)


def wick_loss(w, b, x, y):
    return total(((w @ x).T + b - y.T) ** 2) * 0.5


def torch_loss(w, b, x, y):
    return (((w @ x).T + b - y.T) ** 2).sum() * 0.5


def to_torch(torch, t, requires_grad=False):
    return torch.tensor(t.tolist(), dtype=getattr(torch, TORCH_DT[str(t.dtype)]), requires_grad=requires_grad)


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.3)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
    ("SGD", dict(lr=0.05, momentum=0.5, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1, betas=(0.85, 0.995))),
]


@pytest.mark.parametrize("dt", ["f64", "f32"])
@pytest.mark.parametrize("name,kw", CASES)
def test_five_steps_match_torch(np, torch, name, kw, dt):
    params, x, y = problem(dt)
    tparams = [to_torch(torch, p, True) for p in params]
    tx, ty = to_torch(torch, x), to_torch(torch, y)
    opt = getattr(wick.optim, name)(params, **kw)
    topt = getattr(torch.optim, name)(tparams, **kw)
    for _ in range(5):
        wick_loss(params[0], params[1], x, y).backward()
        opt.step()
        opt.zero_grad()
        torch_loss(tparams[0], tparams[1], tx, ty).backward()
        topt.step()
        topt.zero_grad()
    assert opt.steps == 5 and isinstance(opt, wick.optim.Optimizer)
    tol = 1e-10 if dt == "f64" else 2e-6
    for p, tp in zip(params, tparams):
        a, b = np.array(p.tolist()), tp.detach().double().numpy()
        assert np.allclose(a, b, rtol=tol, atol=tol), (name, kw, a, b)
    # u never had a gradient: untouched (torch skips p.grad None too)
    assert params[2].tolist() == values((2,), 3, dt).tolist()


def test_zero_grad_and_lr(np):
    params, x, y = problem("f64")
    opt = wick.optim.SGD(params, lr=0.1)
    assert opt.lr == 0.1 and opt.steps == 0 and opt.params == tuple(params)
    wick_loss(params[0], params[1], x, y).backward()
    g = np.array(params[0].grad.tolist())
    opt.zero_grad(set_to_none=False)
    assert params[0].grad.tolist() == np.zeros((3, 4)).tolist() and params[2].grad is None
    opt.zero_grad()
    assert params[0].grad is None and params[1].grad is None
    # a schedule: the new lr applies to the next step
    w0 = np.array(params[0].tolist())
    wick_loss(params[0], params[1], x, y).backward()
    opt.lr = 0.5
    opt.step()
    assert opt.lr == 0.5
    assert np.allclose(np.array(params[0].tolist()), w0 - 0.5 * g, rtol=1e-12, atol=1e-12)
    # lr 0 is allowed (it is wick's "default" in the C config: set after creation)
    p = wick.ones(2, requires_grad=True)
    o0 = wick.optim.SGD([p], lr=0)
    (p * 3).backward(wick.ones(2))
    o0.step()
    assert o0.lr == 0 and p.tolist() == [1, 1]
    with pytest.raises(wick.ArgError):
        opt.lr = -1.0
    with pytest.raises(TypeError):
        opt.lr = "fast"


def test_step_closure_and_generator_params():
    params, x, y = problem("f64")
    opt = wick.optim.Adam(p for p in params)  # any iterable (model.parameters() is a generator)
    assert len(opt.params) == 3 and opt.lr == 1e-3

    def closure():
        opt.zero_grad()
        loss = wick_loss(params[0], params[1], x, y)
        loss.backward()
        return loss

    l1 = opt.step(closure).item()
    for _ in range(20):
        l2 = opt.step(closure).item()
    assert l2 < l1 and opt.steps == 21
    assert opt.step() is None


def test_optimizer_errors():
    p = wick.ones(3, requires_grad=True)
    with pytest.raises(ValueError, match="empty"):
        wick.optim.SGD([], lr=0.1)
    with pytest.raises(TypeError):
        wick.optim.SGD([p, 3], lr=0.1)
    with pytest.raises(TypeError):
        wick.optim.SGD(p, lr=0.1)  # one tensor, not an iterable of them
    with pytest.raises(TypeError):
        wick.optim.SGD([{"params": [p]}], lr=0.1)  # parameter groups
    with pytest.raises(TypeError):
        wick.optim.SGD([p])  # lr is required, as torch
    with pytest.raises(ValueError):
        wick.optim.SGD([p], lr=-0.1)
    with pytest.raises(ValueError, match="nesterov"):
        wick.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError):
        wick.optim.Adam([p], betas=(1.0, 0.9))
    with pytest.raises(ValueError):
        wick.optim.Adam([p], eps=-1)
    with pytest.raises(ValueError):
        wick.optim.Adam([p], amsgrad=True)
    with pytest.raises(wick.ArgError):
        wick.optim.SGD([wick.ones(3)], lr=0.1)  # not tracked
    with pytest.raises(wick.ArgError):
        wick.optim.SGD([p * 2], lr=0.1)  # not a leaf
    with pytest.raises(wick.ArgError):
        wick.optim.SGD([p, p], lr=0.1)  # twice
    with pytest.raises(wick.ArgError):
        wick.optim.SGD([wick.ones(3, 2, requires_grad=True).T], lr=0.1)  # not contiguous
    with pytest.raises(TypeError):
        wick.optim.Optimizer()
    # a parameter without a gradient is skipped, the others step
    q = wick.ones(2, requires_grad=True)
    opt = wick.optim.SGD([p, q], lr=0.5)
    (q * 2).backward(wick.ones(2))
    opt.step()
    assert p.tolist() == [1, 1, 1] and q.tolist() == [0, 0]


def test_clip_grad_norm_matches_torch(np, torch):
    params, x, y = problem("f64")
    tparams = [to_torch(torch, p, True) for p in params]
    wick_loss(params[0], params[1], x, y).backward()
    torch_loss(tparams[0], tparams[1], to_torch(torch, x), to_torch(torch, y)).backward()
    n = wick.clip_grad_norm_(params, 0.5)
    tn = torch.nn.utils.clip_grad_norm_(tparams, 0.5)
    assert n.shape == () and n.dtype is wick.f64
    assert abs(n.item() - tn.item()) < 1e-9 * tn.item()
    for p, tp in zip(params[:2], tparams[:2]):
        assert np.allclose(np.array(p.grad.tolist()), tp.grad.numpy(), rtol=1e-10, atol=1e-12)
    # below the bound: left as they are; one Tensor works as torch's
    g = params[1].grad.tolist()
    n1 = wick.clip_grad_norm_(params[1], max_norm=1e9)
    assert params[1].grad.tolist() == g and n1.item() > 0
    with pytest.raises(ValueError, match="norm_type"):
        wick.clip_grad_norm_(params, 1.0, norm_type=1)
    with pytest.raises(wick.ArgError):
        wick.clip_grad_norm_(params, -1.0)
    with pytest.raises(TypeError):
        wick.clip_grad_norm_([1, 2], 1.0)


def test_checkpoint_round_trip(np, tmp_path):
    """Three Adam steps, save; two more -> A. Load into fresh parameters and
    a fresh optimizer (the dict in another order), two steps -> A."""
    path = str(tmp_path / "ck.safetensors")
    params, x, y = problem("f64")
    opt = wick.optim.Adam(params, lr=0.05)

    def steps(ps, o, k):
        for _ in range(k):
            wick_loss(ps[0], ps[1], x, y).backward()
            o.step()
            o.zero_grad()

    steps(params, opt, 3)
    wick.save_checkpoint(path, {"w": params[0], "b": params[1], "u": params[2]}, optimizer=opt)
    steps(params, opt, 2)
    want = [np.array(p.tolist()) for p in params]

    fresh, _, _ = problem("f64")
    fopt = wick.optim.Adam(fresh, lr=0.05)
    wick.load_checkpoint(path, {"u": fresh[2], "b": fresh[1], "w": fresh[0]}, optimizer=fopt)
    assert fopt.steps == 3
    steps(fresh, fopt, 2)
    for p, w in zip(fresh, want):
        assert np.allclose(np.array(p.tolist()), w, rtol=1e-12, atol=1e-12)

    # detached views of the parameters (a state_dict's entries) stand for them
    again, _, _ = problem("f64")
    aopt = wick.optim.Adam(again, lr=0.05)
    wick.load_checkpoint(path, {"w": again[0].detach(), "b": again[1].detach(), "u": again[2].detach()},
                         optimizer=aopt)
    steps(again, aopt, 2)
    for p, w in zip(again, want):
        assert np.allclose(np.array(p.tolist()), w, rtol=1e-12, atol=1e-12)
    wick.save_checkpoint(path, {"w": again[0].detach(), "b": again[1], "u": again[2]}, optimizer=aopt)
    with pytest.raises(ValueError, match="not in the dict"):  # a copy is not the parameter
        wick.save_checkpoint(path, {"w": again[0] * 1, "b": again[1], "u": again[2]}, optimizer=aopt)

    # parameters only (no optimizer); a missing name; a mismatched dict
    plain = wick.zeros(3, 4, dtype="f64", requires_grad=True)
    wick.load_checkpoint(path, {"w": plain})
    with pytest.raises(wick.FormatError):
        wick.load_checkpoint(path, {"nope": plain})
    with pytest.raises(ValueError):
        wick.save_checkpoint(path, {"w": params[0]}, optimizer=opt)
    with pytest.raises(TypeError):
        wick.save_checkpoint(path, [params[0]])
    with pytest.raises(TypeError):
        wick.save_checkpoint(path, {"w": params[0]}, optimizer="adam")
    with pytest.raises(wick.IOError):
        wick.load_checkpoint(str(tmp_path / "missing.safetensors"), {"w": plain})


def test_optimizer_objects_do_not_leak(rss):
    p = wick.ones(16, requires_grad=True)
    g = wick.ones(16)
    for _ in range(2000):
        wick.optim.Adam([p], lr=1e-3).step()
    before = rss()
    for i in range(100_000):
        (p * 1.0).backward(g)
        o = wick.optim.Adam([p], lr=1e-3) if i % 2 else wick.optim.SGD([p], lr=1e-3, momentum=0.9)
        o.step()
        o.zero_grad()
    assert rss() - before < 4.0


def signature_ok(obj, name):
    """The doc's first line is a Python signature of name (the stub generator reads it)."""
    first = getattr(obj, name).__doc__.split("\n")[0]
    assert first.startswith(name + "("), (name, first)
    compile(f"def {first}: pass", "<doc>", "exec")


def test_docstrings_are_signatures():
    for n in ("SGD", "Adam", "AdamW"):
        signature_ok(wick.optim, n)
    for n in ("step", "zero_grad"):
        signature_ok(wick.optim.Optimizer, n)
    for n in ("clip_grad_norm_", "save_checkpoint", "load_checkpoint"):
        signature_ok(wick, n)
