"""The gather / scatter family against PyTorch: index_select, gather,
take_along_dim, scatter(_), scatter_add(_), index_add(_), masked_fill(_),
slice_scatter, embedding — over dtypes, index dtypes, strided inputs, and
the errors each raises."""
import pytest

import wick

DTYPES = ["f32", "f64", "f16", "bf16", "i32", "i64"]


@pytest.fixture(scope="module")
def T(torch):
    return {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
            "i32": torch.int32, "i64": torch.int64}


def pair(torch, T, dt, shape, transposed=False, seed=0):
    """A torch tensor of small integer values (exact in every dtype) and the
    same values as a wick tensor; transposed: both are .T views."""
    g = torch.Generator().manual_seed(seed)
    full = shape[::-1] if transposed else shape
    x = torch.randint(-8, 9, full, generator=g).to(T[dt])
    w = wick.tensor(x.double().tolist(), dtype=dt)
    if transposed:
        x, w = x.T, w.T
        assert not (w.strides[-1] == 1 and len(shape) > 1)
    return w, x


def same(w, x):
    assert tuple(w.shape) == tuple(x.shape)
    assert w.tolist() == x.double().tolist()


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_index_select_and_gather(torch, T, dt, transposed):
    w, x = pair(torch, T, dt, (4, 5), transposed)
    for ixdt in ("i64", "i32", "u32", "u8"):
        ids = wick.tensor([3, 0, 3], dtype=ixdt)
        same(w.index_select(1, ids), x.index_select(1, torch.tensor([3, 0, 3])))
        same(wick.index_select(w, 0, ids), torch.index_select(x, 0, torch.tensor([3, 0, 3])))
    gi = torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]])
    same(w.gather(0, gi.tolist()), x.gather(0, gi))
    same(wick.gather(w, dim=1, index=wick.tensor([[4, 0], [1, 1], [0, 0], [2, 3]], dtype="i32")),
         x.gather(1, torch.tensor([[4, 0], [1, 1], [0, 0], [2, 3]])))
    same(w.take_along_dim(wick.tensor(gi.tolist()), dim=0), torch.take_along_dim(x, gi, dim=0))
    same(w.take_along_dim([7, 0, 19]), torch.take_along_dim(x.contiguous(), torch.tensor([7, 0, 19])))  # torch 1.13 views
    same(w.gather(-1, [[1], [2], [3], [4]]), x.gather(-1, torch.tensor([[1], [2], [3], [4]])))


def test_numpy_index_arrays_are_zero_copy_operands(np, torch):
    x = torch.arange(12.0).reshape(3, 4)
    w = wick.tensor(x.tolist())
    for arr in (np.array([2, 0]), np.array([2, 0], dtype=np.int32), np.array([2, 0], dtype=np.uint32)):
        same(w.index_select(0, arr), x.index_select(0, torch.tensor([2, 0])))
    # a strided numpy index (every other element of a bigger array)
    big = np.array([2, 9, 0, 9, 1, 9])
    same(w.index_select(0, big[::2]), x.index_select(0, torch.tensor([2, 0, 1])))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_scatter_and_scatter_add(torch, T, dt, transposed):
    w, x = pair(torch, T, dt, (4, 5), transposed)
    ws, xs = pair(torch, T, dt, (2, 5), seed=1)
    gi = torch.tensor([[0, 1, 2, 3, 0], [3, 2, 1, 0, 1]])  # no duplicates per column: order-free
    same(w.scatter(0, gi.tolist(), ws), x.scatter(0, gi, xs))
    same(w.scatter(0, gi.tolist(), value=3), x.scatter(0, gi, 3))
    same(wick.scatter(w, 1, [[4], [0], [1], [2]], 5), torch.scatter(x, 1, torch.tensor([[4], [0], [1], [2]]), 5))
    dup = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 3, 1, 1]])  # duplicates accumulate
    same(w.scatter_add(0, dup.tolist(), ws), x.scatter_add(0, dup, xs))
    same(wick.scatter_add(w, 0, dup.tolist(), ws), torch.scatter_add(x, 0, dup, xs))
    same(w.scatter(0, dup.tolist(), ws, reduce="add"), x.scatter_add(0, dup, xs))
    # the smaller index of torch's rule: ids sizes <= src's
    same(w.scatter(1, [[1, 2]], ws), x.scatter(1, torch.tensor([[1, 2]]), xs))
    # in place: self returned, memory written
    w2, x2 = pair(torch, T, dt, (4, 5), transposed)
    r = w2.scatter_(0, gi.tolist(), ws)
    x2.scatter_(0, gi, xs)
    assert r is w2
    same(w2, x2)
    assert w2.scatter_add_(0, dup.tolist(), ws) is w2
    x2.scatter_add_(0, dup, xs)
    same(w2, x2)
    w2.scatter_(1, [[0], [0], [0], [0]], value=-2)
    x2.scatter_(1, torch.zeros(4, 1, dtype=torch.int64), -2)
    same(w2, x2)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_index_add(torch, T, dt, transposed):
    w, x = pair(torch, T, dt, (4, 5), transposed)
    ws, xs = pair(torch, T, dt, (3, 5), seed=2)
    ids = [1, 3, 1]
    same(w.index_add(0, ids, ws), x.index_add(0, torch.tensor(ids), xs))
    same(wick.index_add(w, 0, wick.tensor(ids, dtype="i32"), ws, alpha=2), x.index_add(0, torch.tensor(ids), xs, alpha=2))
    wc, xc = pair(torch, T, dt, (4, 4), seed=3)
    same(w.index_add(1, [4, 0, 0, 2], wc.T), x.index_add(1, torch.tensor([4, 0, 0, 2]), xc.T))
    r = w.index_add_(0, ids, ws)
    x.index_add_(0, torch.tensor(ids), xs)
    assert r is w
    same(w, x)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("transposed", [False, True])
def test_masked_fill(np, torch, T, dt, transposed):
    w, x = pair(torch, T, dt, (4, 5), transposed)
    m = x > 0
    for mask in (w > 0, m.numpy(), m.tolist(), m):
        same(w.masked_fill(mask, 7), x.masked_fill(m, 7))
    same(wick.masked_fill(w, w < 0, -1), torch.masked_fill(x, x < 0, -1))
    row = torch.tensor([True, False, True, False, False])  # broadcasts over rows
    same(w.masked_fill(row.tolist(), 2), x.masked_fill(row, 2))
    same(w.masked_fill(w > 0, wick.tensor(3)), x.masked_fill(m, torch.tensor(3)))
    r = w.masked_fill_(w > 0, 1)
    x.masked_fill_(m, 1)
    assert r is w
    same(w, x)


def test_slice_scatter(torch):
    x = torch.arange(24.0).reshape(4, 6)
    w = wick.tensor(x.tolist())

    def ref(key, v):  # torch 1.13's slice_scatter mishandles its defaults: the oracle is a slice write
        r = x.clone()
        r[key] = v
        return r

    S = slice(None)
    same(w.slice_scatter(wick.zeros(2, 6), start=1, end=3), ref(slice(1, 3), 0))
    same(w.slice_scatter(wick.ones(4, 3), dim=1, start=0, step=2), ref((S, slice(0, None, 2)), 1))
    same(wick.slice_scatter(w, wick.ones(4, 2), dim=-1, start=4), ref((S, slice(4, None)), 1))
    same(w.slice_scatter(wick.ones(4, 2), 1, 4, 6, 1),
         torch.slice_scatter(x, torch.ones(4, 2), 1, 4, 6, 1))  # every argument given: torch agrees
    assert w.tolist() == x.tolist()  # a copy: self untouched
    with pytest.raises(wick.ShapeError, match="does not fit"):
        w.slice_scatter(wick.ones(4, 3), dim=1, start=0, end=2)
    with pytest.raises(ValueError, match="step"):
        w.slice_scatter(wick.ones(4, 3), dim=1, step=0)


@pytest.mark.parametrize("dt", ["f32", "f16", "bf16", "f64"])
def test_embedding(torch, T, dt):
    table_t = torch.arange(20.0).reshape(5, 4).to(T[dt])
    table = wick.tensor(table_t.double().tolist(), dtype=dt)
    ids = [[0, 4, 4], [1, 2, 3]]
    ref = torch.nn.functional.embedding(torch.tensor(ids), table_t)
    same(wick.embedding(ids, table), ref)
    same(wick.embedding(input=wick.tensor(ids, dtype="i32"), weight=table), ref)
    same(wick.embedding(ids=ids, table=table), ref)
    same(wick.embedding(wick.tensor(ids, dtype="u32"), table.T.T), ref)
    with pytest.raises(wick.IndexError):
        wick.embedding([5], table)
    with pytest.raises(TypeError):
        wick.embedding(ids)
    with pytest.raises(TypeError):
        wick.embedding(ids, table, ids=ids)


def test_empty_and_one_element(torch):
    w = wick.zeros(3, 2)
    x = torch.zeros(3, 2)
    same(w.index_select(0, []), x.index_select(0, torch.tensor([], dtype=torch.int64)))
    same(w.scatter(0, wick.zeros(0, 2, dtype="i64"), 1.0), x.scatter(0, torch.zeros(0, 2, dtype=torch.int64), 1.0))
    one = wick.tensor([5.0])
    same(one.gather(0, [0, 0]), torch.tensor([5.0]).gather(0, torch.tensor([0, 0])))
    same(one.masked_fill([True], 1), torch.tensor([5.0]).masked_fill(torch.tensor([True]), 1))


def test_errors(np):
    w = wick.zeros(3, 4)
    with pytest.raises(wick.IndexError, match="out of range"):
        w.index_select(0, [3])
    with pytest.raises(wick.IndexError):
        w.gather(1, [[4]])
    with pytest.raises(wick.IndexError):
        w.scatter(0, [[-1]], 1.0)  # wick takes no negative indices in these ops
    with pytest.raises(wick.IndexError):
        w.index_select(2, [0])  # no such dim
    with pytest.raises(wick.DTypeError, match="index dtype"):
        w.index_select(0, wick.tensor([0.0]))
    with pytest.raises(wick.DTypeError, match="index dtype"):
        w.gather(0, [[0.5]])
    with pytest.raises(wick.DTypeError):
        w.scatter(0, [[0]], wick.ones(1, 1, dtype="f64"))  # src of another dtype (torch's rule)
    with pytest.raises(wick.ShapeError):
        w.gather(0, [0, 1])  # index rank differs
    with pytest.raises(wick.ShapeError):
        w.index_add(0, [0], wick.ones(2, 4))
    with pytest.raises(wick.ShapeError):
        w.masked_fill(wick.ones(2, dtype="u8"), 1)
    with pytest.raises(TypeError, match="missing required argument"):
        w.gather(0)
    with pytest.raises(TypeError, match="src"):
        w.scatter(0, [[0]])
    with pytest.raises(TypeError, match="not both"):
        w.scatter(0, [[0]], wick.ones(1, 1), value=1)
    with pytest.raises(ValueError, match="reduce"):
        w.scatter(0, [[0]], 1.0, reduce="multiply")
    with pytest.raises(TypeError):
        w.index_select(0, "x")
    with pytest.raises(TypeError, match="input"):
        wick.gather([1, 2], 0, [0])
    with pytest.raises(TypeError):
        w.index_select("a", [0])
    ro = np.zeros((3, 4), dtype=np.float32)
    ro.flags.writeable = False
    r = wick.from_numpy(ro)
    for f in (lambda: r.scatter_(0, [[1]], 1.0), lambda: r.scatter_add_(0, [[1]], wick.ones(1, 1)),
              lambda: r.index_add_(0, [1], wick.ones(1, 4)), lambda: r.masked_fill_(r == 0, 1)):
        with pytest.raises(wick.ArgError):
            f()
    assert not ro.any()
    assert r.scatter(0, [[1]], 1.0).tolist()[1][0] == 1  # the copying forms read it fine


def test_no_leak_over_100k_calls(rss):
    w = wick.zeros(8, 8)
    ids = wick.tensor([[1, 2]])
    src = wick.ones(1, 2)
    m = w > 0

    def once():
        w.gather(0, ids)
        w.scatter_(0, ids, src)
        w.index_add(0, [1], wick.ones(1, 8))
        w.masked_fill(m, 1.0)
        wick.embedding([1, 2], w)

    for _ in range(2000):
        once()
    before = rss()
    for _ in range(20000):
        once()  # 100k calls
    assert rss() - before < 4, "the gather family leaks"
