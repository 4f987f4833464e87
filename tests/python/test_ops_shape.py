"""Views, joins, rearrangements and the matmul family (python/src/ops_shape.c)
against PyTorch (and numpy for memory sharing): over dtypes, non-contiguous
inputs, empty and one-element tensors, negative dims, and bad input."""
import pytest

import wick

# every element dtype both wick and torch have, for the data-movement ops
DTYPES = ["f32", "f64", "f16", "bf16", "i64", "i32", "u8"]
FLOATS = ["f32", "f64", "f16", "bf16"]


def torch_dtype(torch, name):
    return {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
            "i64": torch.int64, "i32": torch.int32, "u8": torch.uint8}[name]


def pair(np, torch, arr, dt):
    """The same values as a wick tensor and a torch tensor of dtype dt."""
    x = torch.from_numpy(np.ascontiguousarray(arr)).to(torch_dtype(torch, dt))
    w = wick.tensor(x.to(torch.float64).numpy(), dtype=dt)
    return w, x


def to_np(np, w):
    """A wick tensor's values as f64 numpy (every dtype converts exactly)."""
    return np.asarray(wick.tensor(w, dtype="f64"))


def same(np, w, t, tol=0.0):
    """wick result w equals torch result t (tuples element by element)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(w, tuple) and len(w) == len(t)
        for a, b in zip(w, t):
            same(np, a, b, tol)
        return
    assert isinstance(w, wick.Tensor)
    assert w.shape == tuple(t.shape)
    np.testing.assert_allclose(to_np(np, w), t.double().numpy(), rtol=tol, atol=tol)


def layouts(np, torch, dt):
    """(wick, torch) pairs: contiguous, transposed (last two dims), sliced."""
    arr = (np.arange(2 * 3 * 4).reshape(2, 3, 4) % 23).astype(np.float64)
    w, x = pair(np, torch, arr, dt)
    yield w, x
    yield w.transpose(-1, -2), x.transpose(-1, -2)
    yield w[:, 1:], x[:, 1:]


# ops where the torch method call and the wick one are spelled the same
VIEW_CASES = [
    ("reshape", lambda t: t.reshape(-1, 2)),
    ("reshape_tuple", lambda t: t.reshape((t.shape[0], -1))),
    ("reshape_as", lambda t: t.reshape_as(t.flatten())),
    ("permute", lambda t: t.permute(2, 0, 1)),
    ("permute_neg", lambda t: t.permute(-1, -3, -2)),
    ("transpose", lambda t: t.transpose(0, -1)),
    ("t", lambda t: t[0].t()),
    ("squeeze_all", lambda t: t[:1, :, :1].squeeze()),
    ("squeeze_dim", lambda t: t[:1].squeeze(0)),
    ("squeeze_neg_noop", lambda t: t.squeeze(-1)),
    ("unsqueeze", lambda t: t.unsqueeze(1)),
    ("unsqueeze_end", lambda t: t.unsqueeze(-1)),
    ("flatten", lambda t: t.flatten()),
    ("flatten_range", lambda t: t.flatten(1, -1)),
    ("flatten_first", lambda t: t.flatten(0, 1)),
    ("unflatten", lambda t: t.unflatten(-1, (t.shape[-1], 1))),
    ("narrow", lambda t: t.narrow(-1, 1, 2)),
    ("narrow_neg_start", lambda t: t.narrow(1, -2, 2)),
    ("select", lambda t: t.select(1, 0)),
    ("select_neg", lambda t: t.select(-1, -1)),
    ("expand", lambda t: t[:, :1].expand(2, 5, t.shape[-1])),
    ("expand_keep", lambda t: t.unsqueeze(0).expand(3, -1, -1, -1)),
    ("broadcast_to", lambda t: t[0].broadcast_to((2,) + tuple(t[0].shape))),
    ("expand_as", lambda t: t[:1].expand_as(t)),
    ("chunk", lambda t: t.chunk(2, dim=-1)),
    ("chunk_uneven", lambda t: t.chunk(3, 1)),
    ("chunk_many", lambda t: t.chunk(10, 0)),
    ("split_int", lambda t: t.split(2, dim=-1)),
    ("split_list", lambda t: t.split([1, t.shape[1] - 1], 1)),
    ("unbind", lambda t: t.unbind(1)),
    ("unbind0", lambda t: t.unbind()),
    ("movedim", lambda t: t.movedim(0, -1)),
    ("movedim_seq", lambda t: t.movedim((0, 1), (2, 0))),
    ("repeat", lambda t: t.repeat(2, 1, 3)),
    ("repeat_extra", lambda t: t.repeat(2, 1, 1, 2)),
    ("flip", lambda t: t.flip(0, -1)),
    ("flip_list", lambda t: t.flip([1])),
    ("roll", lambda t: t.roll(1, 1)),
    ("roll_neg_big", lambda t: t.roll(-7, -1)),
    ("roll_seq", lambda t: t.roll((1, -2), (0, 2))),
    ("roll_flat", lambda t: t.roll(5)),
    ("tril", lambda t: t.tril()),
    ("tril_k", lambda t: t.tril(-1)),
    ("triu_k", lambda t: t.triu(diagonal=1)),
]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name,f", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_against_torch(np, torch, name, f, dt):
    for w, x in layouts(np, torch, dt):
        same(np, f(w), f(x))


def test_module_functions(np, torch):
    for w, x in layouts(np, torch, "f32"):
        same(np, wick.reshape(w, (4, -1)), torch.reshape(x, (4, -1)))
        same(np, wick.permute(w, (1, 2, 0)), torch.permute(x, (1, 2, 0)))
        same(np, wick.transpose(w, 0, 1), torch.transpose(x, 0, 1))
        same(np, wick.swapaxes(w, 0, 2), torch.swapaxes(x, 0, 2))
        same(np, wick.t(w[0]), torch.t(x[0]))
        same(np, wick.squeeze(w[:1], 0), torch.squeeze(x[:1], 0))
        same(np, wick.unsqueeze(w, -2), torch.unsqueeze(x, -2))
        same(np, wick.flatten(w, 1), torch.flatten(x, 1))
        same(np, wick.unflatten(w, 0, (1, 2)), torch.unflatten(x, 0, (1, 2)))
        same(np, wick.narrow(w, 1, 0, 1), torch.narrow(x, 1, 0, 1))
        same(np, wick.select(w, 0, 1), torch.select(x, 0, 1))
        same(np, wick.broadcast_to(w, (3,) + tuple(x.shape)), torch.broadcast_to(x, (3,) + tuple(x.shape)))
        same(np, wick.chunk(w, 2, -1), torch.chunk(x, 2, -1))
        same(np, wick.split(w, 1), torch.split(x, 1))
        same(np, wick.unbind(w, -1), torch.unbind(x, -1))
        same(np, wick.movedim(w, -1, 0), torch.movedim(x, -1, 0))
        same(np, wick.moveaxis(w, 0, 1), torch.moveaxis(x, 0, 1))
        same(np, wick.flip(w, (0, 2)), torch.flip(x, (0, 2)))
        same(np, wick.roll(w, 2, 0), torch.roll(x, 2, 0))
        same(np, wick.tril(w, 1), torch.tril(x, 1))
        same(np, wick.triu(w), torch.triu(x))
    # keyword forms
    w, x = pair(np, torch, np.arange(6.0).reshape(2, 3), "f32")
    same(np, w.permute(dims=(1, 0)), x.permute(dims=(1, 0)))
    same(np, w.reshape(shape=(3, 2)), x.reshape(shape=(3, 2)))
    same(np, w.transpose(dim1=0, dim0=1), x.transpose(dim1=0, dim0=1))
    same(np, w.flip(dims=[0]), x.flip(dims=[0]))
    same(np, w.view(size=(6,)), x.view(size=(6,)))
    same(np, w.narrow(dim=1, start=1, length=2), x.narrow(dim=1, start=1, length=2))
    # numpy integers count as ints (__index__)
    i0, i1, i2 = np.int64(0), np.int32(1), np.int64(2)
    same(np, w.reshape(np.int64(6)), x.reshape(6))
    same(np, w.flip(i0), x.flip(0))
    same(np, w.split(i2, i1), x.split(2, 1))
    same(np, w.roll(i1, i1), x.roll(1, 1))
    same(np, w.permute(i1, i0), x.permute(1, 0))
    same(np, w.chunk(i2, dim=i1), x.chunk(2, dim=1))


def test_views_share_memory(np):
    base = wick.zeros(2, 3, 4)
    mem = np.asarray(base)  # numpy over wick's memory: a write here is a write into base
    views = [base.reshape(6, 4), base.view(-1), base.permute(2, 0, 1), base.transpose(0, 1), base.unsqueeze(0),
             base.narrow(2, 1, 3), base.select(1, 2), base[:1].squeeze(0), base.flatten(), base.movedim(0, 2),
             base[:, :1].expand(2, 3, 4), base.chunk(2, 2)[1], base.split([1, 2], 1)[1], base.unbind(0)[1],
             base[0].t(), base.unflatten(2, (2, 2))]
    mem[...] = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    expected = [np.arange(24).reshape(6, 4), np.arange(24), mem.transpose(2, 0, 1), mem.transpose(1, 0, 2),
                mem[None], mem[:, :, 1:], mem[:, 2], mem[0], mem.ravel(), np.moveaxis(mem, 0, 2),
                np.broadcast_to(mem[:, :1], (2, 3, 4)), mem[:, :, 2:], mem[:, 1:], mem[1], mem[0].T,
                mem.reshape(2, 3, 2, 2)]
    for v, e in zip(views, expected):
        np.testing.assert_array_equal(np.asarray(v), e)


def test_view_refuses_to_copy():
    t = wick.zeros(3, 4)
    assert t.view(12).shape == (12,) and t.view(2, -1, 2).shape == (2, 3, 2)
    assert t.t().view(4, 3, 1).shape == (4, 3, 1)  # adding a size-1 dim is still a view
    with pytest.raises(wick.ShapeError, match="reshape"):
        t.t().view(12)
    with pytest.raises(wick.ShapeError):
        t[:, 1:].view(9)
    assert t.t().reshape(12).shape == (12,)  # reshape copies instead
    assert t.view_as(wick.ones(2, 6)).shape == (2, 6)
    with pytest.raises(wick.ShapeError):
        t.t().view_as(wick.ones(12))
    with pytest.raises(TypeError):
        t.view_as((2, 6))
    with pytest.raises(wick.ShapeError):
        t.view(5, 3)


def test_empty_and_one_element(np, torch):
    w, x = pair(np, torch, np.zeros((0, 3)), "f32")
    for f in [lambda t: t.reshape(3, 0), lambda t: t.reshape(-1, 3, 1), lambda t: t.t(), lambda t: t.flip(0),
              lambda t: t.roll(1, 1), lambda t: t.repeat(2, 2), lambda t: t.unsqueeze(0), lambda t: t.squeeze(),
              lambda t: t.chunk(2), lambda t: t.split(2), lambda t: t.split([0]), lambda t: t.unbind(0),
              lambda t: t.unbind(1), lambda t: t.expand(2, 0, 3), lambda t: t.tril(), lambda t: t.narrow(1, 3, 0),
              lambda t: t.flatten()]:
        same(np, f(w), f(x))
    same(np, wick.cat([w, w], 0), torch.cat([x, x], 0))
    same(np, wick.cat([w, pair(np, torch, np.ones((2, 3)), "f32")[0]]),
         torch.cat([x, torch.ones(2, 3)]))
    same(np, wick.stack([w, w], 1), torch.stack([x, x], 1))
    a, ta = pair(np, torch, np.zeros((0, 3)), "f32")
    b, tb = pair(np, torch, np.ones((3, 2)), "f32")
    same(np, a.matmul(b), ta.matmul(tb))
    c, tc = pair(np, torch, np.ones((2, 0)), "f32")
    d, td = pair(np, torch, np.ones((0, 4)), "f32")
    same(np, c @ d, tc @ td)
    same(np, c.mm(d), tc.mm(td))
    # one element, rank 0
    o, to = pair(np, torch, np.full((1, 1, 1), 5.0), "f64")
    for f in [lambda t: t.squeeze(), lambda t: t.reshape(()), lambda t: t.flatten(), lambda t: t.squeeze(1),
              lambda t: t.expand(2, 3, 1), lambda t: t.repeat(2, 1, 1), lambda t: t.flip(0, 1, 2),
              lambda t: t.roll(3), lambda t: t.movedim(0, 2)]:
        same(np, f(o), f(to))
    s, ts = pair(np, torch, np.array(3.0), "f32")
    for f in [lambda t: t.reshape(1), lambda t: t.unsqueeze(0), lambda t: t.squeeze(), lambda t: t.t(),
              lambda t: t.flatten(), lambda t: t.expand(4), lambda t: t.squeeze(0)]:
        same(np, f(s), f(ts))


@pytest.mark.parametrize("dt", DTYPES)
def test_joins(np, torch, dt):
    ws, xs = zip(*[pair(np, torch, np.arange(12.0).reshape(3, 4) + 10 * i, dt) for i in range(3)])
    for dim in (0, 1, -1, -2):
        same(np, wick.cat(list(ws), dim=dim), torch.cat(xs, dim=dim))
        same(np, wick.stack(ws, dim), torch.stack(xs, dim))
    same(np, wick.stack(ws, dim=2), torch.stack(xs, dim=2))
    same(np, wick.concatenate([ws[0].t(), ws[1][:2].t()], 1), torch.cat([xs[0].t(), xs[1][:2].t()], 1))
    same(np, wick.concat((w for w in ws), 0), torch.cat(xs, 0))  # a generator's items stay alive
    same(np, wick.stack([ws[0].t(), ws[1].t()]), torch.stack([xs[0].t(), xs[1].t()]))


def test_meshgrid(np, torch):
    a, ta = pair(np, torch, np.arange(3.0), "f32")
    b, tb = pair(np, torch, np.arange(4.0) * 2, "f32")
    c, tc = pair(np, torch, np.arange(2.0) - 5, "f32")
    for ix in ("ij", "xy"):
        same(np, wick.meshgrid(a, b, indexing=ix), torch.meshgrid(ta, tb, indexing=ix))
        same(np, wick.meshgrid([a, b, c], indexing=ix), torch.meshgrid([ta, tb, tc], indexing=ix))
    same(np, wick.meshgrid(a, b), torch.meshgrid(ta, tb, indexing="ij"))
    same(np, wick.meshgrid(a), torch.meshgrid(ta, indexing="ij"))
    with pytest.raises(ValueError):
        wick.meshgrid(a, b, indexing="yx")
    with pytest.raises(wick.ArgError):
        wick.meshgrid()
    with pytest.raises(TypeError):
        wick.meshgrid(a, [1, 2])


PAD_CASES = [
    ((1, 2), "constant", None),
    ((1, 2), "constant", 0),
    ((0, 1, 2, 0), "constant", 3.5),
    ((1, 1, 1, 1, 1, 1), "constant", -1),
    ((-1, 2), "constant", None),
    ((1, -2, -1, 0), "constant", 2),
    ((2, 1), "replicate", None),
    ((2, 1, 1, 2), "replicate", None),
    ((2, 1), "reflect", None),
    ((1, 2, 2, 1), "reflect", None),
    ((2, 3), "circular", None),
    ((1, 0, 3, 2), "circular", None),
]


@pytest.mark.parametrize("dt", FLOATS + ["i64"])
@pytest.mark.parametrize("pad,mode,value", PAD_CASES)
def test_pad(np, torch, dt, pad, mode, value):
    F = torch.nn.functional
    for w, x in layouts(np, torch, "f64"):
        w, x = wick.tensor(w, dtype=dt), x.to(torch_dtype(torch, dt))
        kw = {} if value is None else {"value": value}
        try:
            if mode != "constant":
                # torch 1.13 pads rank len(pad) / 2 + 2 inputs only, and has no CPU
                # kernels for f16 / bf16 / i64 there (their values are exact in f64)
                xin = x.double() if dt in ("f16", "bf16", "i64") else x
                lead = len(pad) // 2 + 2 - xin.dim()
                ref = F.pad(xin.reshape((1,) * lead + tuple(xin.shape)), pad, mode=mode)
                ref = ref.reshape(ref.shape[lead:])
            else:
                ref = F.pad(x, pad, mode=mode, value=value if value is not None else 0)
        except RuntimeError:  # too large for reflect / circular on the sliced layout: wick refuses too
            with pytest.raises(ValueError):
                wick.pad(w, pad, mode=mode, **kw)
            continue
        same(np, wick.pad(w, pad, mode=mode, **kw), ref)


def test_pad_errors():
    t = wick.ones(2, 3)
    with pytest.raises(ValueError):
        wick.pad(t, (1,))
    with pytest.raises(ValueError):
        wick.pad(t, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError):
        wick.pad(t, (1, 1), mode="symmetric")
    with pytest.raises(ValueError):
        wick.pad(t, (3, 0), mode="reflect")
    with pytest.raises(ValueError):
        wick.pad(t, (-1, 0), mode="replicate")
    with pytest.raises(ValueError):
        wick.pad(t, (1, 0), mode="replicate", value=2)
    with pytest.raises(wick.ShapeError):
        wick.pad(t, (-2, -2))
    with pytest.raises(TypeError):
        wick.pad(t, 1)
    with pytest.raises(TypeError):
        wick.pad([1, 2], (1, 1))


@pytest.mark.parametrize("dt", FLOATS)
def test_matmul_family(np, torch, dt):
    rng = np.random.default_rng(7)
    tol = {"f32": 1e-5, "f64": 1e-12, "f16": 2e-2, "bf16": 1e-1}[dt]

    def mk(*shape):
        return pair(np, torch, rng.integers(-3, 4, size=shape) + rng.random(shape) * 0.5, dt)

    def check(w, t):  # the oracle in f64 on the (rounded) inputs
        same(np, w, t, tol)

    a, ta = mk(3, 5)
    b, tb = mk(5, 4)
    v, tv = mk(5)
    u, tu = mk(3)
    ba, tba = mk(2, 3, 5)
    bb, tbb = mk(2, 5, 4)
    cb, tcb = mk(4, 1, 5, 2)
    d = torch.float64
    check(a.matmul(b), ta.to(d) @ tb.to(d))
    check(a.mm(b), ta.to(d).mm(tb.to(d)))
    check(wick.mm(a, b), ta.to(d).mm(tb.to(d)))
    check(a.mv(v), ta.to(d).mv(tv.to(d)))
    check(wick.mv(a, v), ta.to(d).mv(tv.to(d)))
    check(v.dot(v), tv.to(d).dot(tv.to(d)))
    check(wick.dot(u, u), tu.to(d).dot(tu.to(d)))
    check(ba.bmm(bb), tba.to(d).bmm(tbb.to(d)))
    check(wick.bmm(ba, bb), tba.to(d).bmm(tbb.to(d)))
    # torch.matmul's 1-D rules and broadcasting of batch dims
    check(v.matmul(v), tv.to(d).matmul(tv.to(d)))
    check(u.matmul(a), tu.to(d).matmul(ta.to(d)))
    check(a.matmul(v), ta.to(d).matmul(tv.to(d)))
    check(ba.matmul(v), tba.to(d).matmul(tv.to(d)))
    check(u.matmul(ba), tu.to(d).matmul(tba.to(d)))
    check(ba.matmul(b), tba.to(d).matmul(tb.to(d)))
    check(a.matmul(bb), ta.to(d).matmul(tbb.to(d)))
    check(wick.matmul(ba, cb), torch.matmul(tba.to(d), tcb.to(d)))
    # non-contiguous operands
    check(b.t().matmul(a.t()), tb.to(d).t() @ ta.to(d).t())
    check(bb.mT.bmm(ba.mT), tbb.to(d).mT.bmm(tba.to(d).mT))
    check(a[:, 1:].mv(v[1:]), ta.to(d)[:, 1:].mv(tv.to(d)[1:]))
    check(a.t().mm(a), ta.to(d).t().mm(ta.to(d)))


def test_matmul_errors():
    a, b = wick.ones(2, 3), wick.ones(4, 2)
    with pytest.raises(wick.ShapeError):
        a.matmul(b)
    with pytest.raises(wick.ShapeError):
        a.mm(wick.ones(2, 3, 4))
    with pytest.raises(wick.ShapeError):
        wick.ones(2, 3, 4).bmm(wick.ones(3, 4, 2))
    with pytest.raises(wick.ShapeError):
        a.mv(wick.ones(2))
    with pytest.raises(wick.ShapeError):
        wick.ones(3).dot(wick.ones(2))
    with pytest.raises(wick.ShapeError):
        a.dot(a)
    with pytest.raises(wick.ShapeError):
        wick.tensor(2.0).matmul(a)
    with pytest.raises(wick.DTypeError):
        wick.ones(2, 2, dtype="i64").matmul(wick.ones(2, 2, dtype="i64"))
    with pytest.raises(wick.DTypeError):
        a.mm(wick.ones(3, 2, dtype="f64"))
    with pytest.raises(TypeError):
        a.matmul([[1.0], [2.0], [3.0]])
    with pytest.raises(TypeError):
        wick.mm([[1.0]], a)
    with pytest.raises(TypeError):
        a.mm()


def test_errors():
    t = wick.zeros(2, 3, 4)
    # bad dims: wick's classes (IndexError / ShapeError / ArgError are also IndexError / ValueError)
    for f in [lambda: t.transpose(0, 3), lambda: t.unsqueeze(4), lambda: t.squeeze(3), lambda: t.flatten(0, 5),
              lambda: t.select(3, 0), lambda: t.narrow(-4, 0, 1), lambda: t.chunk(2, 3), lambda: t.split(2, -4),
              lambda: t.unbind(3), lambda: t.movedim(3, 0), lambda: t.flip(3), lambda: t.roll(1, 3),
              lambda: wick.cat([t, t], 3), lambda: wick.stack([t, t], 4), lambda: t.unflatten(3, (1, 4))]:
        with pytest.raises(wick.IndexError):
            f()
    for f in [lambda: t.reshape(5, 5), lambda: t.reshape(-1, -1), lambda: t.permute(0, 1),
              lambda: t.expand(2, 5, 4), lambda: t.expand(-1, 2, 3, 4), lambda: t.expand(3, 4),
              lambda: t.broadcast_to((3, 3, 4)), lambda: t.split([1, 2], 0), lambda: t.t(),
              lambda: t.unflatten(2, (3, 2)), lambda: wick.cat([t, wick.zeros(2, 2, 4)], 0),
              lambda: wick.stack([t, t[:1]])]:
        with pytest.raises(wick.ShapeError):
            f()
    for f in [lambda: t.narrow(1, 2, 2), lambda: t.select(0, 2), lambda: t.select(0, -3)]:
        with pytest.raises(wick.IndexError):
            f()
    for f in [lambda: t.permute(0, 0, 1), lambda: t.chunk(0), lambda: t.split(0), lambda: t.split(-1),
              lambda: t.movedim((0, 1), (1, 1)), lambda: wick.cat([]), lambda: wick.stack([]),
              lambda: t.repeat(2, 2)]:
        with pytest.raises(wick.ArgError):
            f()
    with pytest.raises(wick.DTypeError):
        wick.cat([t, wick.zeros(2, 3, 4, dtype="f64")])
    with pytest.raises(ValueError):
        t.movedim((0, 1), 2)
    with pytest.raises(ValueError):
        t.roll((1, 2), 0)
    with pytest.raises(ValueError):
        t.roll((1, 2))
    # every wick error is a wick.Error
    with pytest.raises(wick.Error):
        t.reshape(7)
    # wrong types
    for f in [lambda: t.reshape("ab"), lambda: t.reshape(2.5, 12), lambda: t.transpose(0.5, 1),
              lambda: t.transpose(0), lambda: t.permute(None), lambda: t.squeeze("x"), lambda: t.narrow(0, 0),
              lambda: t.chunk(2.0), lambda: t.split("a"), lambda: t.movedim("a", 0), lambda: t.flip(0.5),
              lambda: t.roll(1.5), lambda: t.expand_as(3), lambda: wick.cat(t), lambda: wick.cat([t, 1.0]),
              lambda: wick.stack(5), lambda: wick.reshape([1, 2], (2,)), lambda: wick.transpose(),
              lambda: t.reshape(2, 3, shape=(4,)), lambda: t.transpose(0, 1, bad=1), lambda: t.tril(k=1)]:
        with pytest.raises(TypeError):
            f()


def test_leak_check(rss):
    t = wick.zeros(4, 6)
    other = wick.ones(6, 3)
    for _ in range(2000):  # warm the allocator and the caches first
        t.reshape(6, 4).permute(1, 0).chunk(2, 1)
        wick.cat([t, t], 0)
        t.matmul(other)
    before = rss()
    for _ in range(100_000):
        t.reshape(6, 4).permute(1, 0).chunk(2, 1)
        wick.cat([t, t], 0)
        t.view(24).unsqueeze(0).expand(3, 24)
        t.matmul(other)
        try:
            t.view(5)
        except wick.ShapeError:
            pass
    grown = rss() - before
    assert grown < 8, f"RSS grew {grown:.1f} MiB over 100k shape-op rounds"
