"""t[key] and t[key] = value against numpy: ints, slices (any step, negative
included), None, ..., index arrays (lists, numpy, wick and torch tensors),
boolean masks, and their combinations; views stay views; errors."""
import pytest

import wick

S = slice(None)


def keys(np):
    a = np.arange(60).reshape(3, 4, 5)
    return [
        1, -1, (1, 2), (S, 1), (..., 0), (None,), (S, None, 1), (1, ..., None),
        slice(1, None), (S, slice(1, 3)), slice(5, None),
        slice(None, None, 2), (S, slice(None, None, 3)), (slice(0, 3, 2), S, slice(1, 5, 2)),
        slice(None, None, -1), (S, slice(3, 0, -2)), (S, slice(None, None, -3), slice(4, None, -1)), slice(2, -5, -1),
        [0, 2], [-1, 0], (..., [1, 3]), ([0, 1], [1, 2]), (0, S, [0, 1]), (S, [0, 1], [2, 3]),
        ([0, 1], S, [2, 3]), (slice(None, None, 2), [0, 1]), (None, [1], None, slice(1, None, 3)),
        ([[0], [2]], [1, 2]), (1, slice(None, None, 2), [0, -1]), ([0, 1], None, [1, 2]), ([0, 1], ..., [1, 2]),
        (slice(None, None, -1), [0, 2]), (S, 0, [1, 2]), ([[1, 2], [0, 0]], S, 0),
        np.array([2, 0]), (S, np.array([[0, 3], [1, 1]], dtype=np.int32)), np.int64(2), np.array(1),
        a[:, 0, 0] > 10, a > 30, (S, a[0] > 7), (a[:, :, 0] > 20,), (S, a[0, :, 0] > 3), (a[:, :, 0] > 100,),
        ([True, False, True],), ([0, 1], a[0, :, 0] > 7), True, False, (..., None),
        [], (S, [], S),
    ]


def as_np(np, t):
    return np.asarray(t)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_getitem_matches_numpy(np, layout):
    base = np.arange(60, dtype=np.float32)
    a = base.reshape(3, 4, 5) if layout == "contiguous" else base.reshape(5, 4, 3).transpose(2, 1, 0)
    t = wick.from_numpy(a)  # zero-copy, with a's strides
    for k in keys(np):
        ref = a[k]
        got = t[k]
        assert got.shape == ref.shape, k
        assert np.array_equal(as_np(np, got), ref), k


def test_index_operand_kinds(np, torch):
    a = np.arange(20, dtype=np.float64).reshape(4, 5)
    t = wick.from_numpy(a)
    ref = a[:, [3, 0, 3]]
    for ix in ([3, 0, 3], (3, 0, 3), np.array([3, 0, 3]), np.array([3, 0, 3], dtype=np.int32),
               np.array([3, 0, 3], dtype=np.uint32), wick.tensor([3, 0, 3]), wick.tensor([3, 0, 3], dtype="i32"),
               wick.tensor([3, 0, 3], dtype="u32"), torch.tensor([3, 0, 3])):
        assert np.array_equal(as_np(np, t[:, ix]), ref), type(ix)
    # masks: u8 tensors (what comparisons give), numpy bool arrays, lists of bools, torch bool tensors
    m = a > 7
    for mk in (m, t > 7, wick.from_numpy(m.astype(np.uint8)), torch.from_numpy(m), m.tolist()):
        assert np.array_equal(as_np(np, t[mk]), a[m])
    assert t[t > 100].shape == (0,)
    # 0-d integer indices are ints
    assert t[wick.tensor(2)].tolist() == a[2].tolist() and t[np.int32(-1), np.array(0)].item() == a[-1, 0]


def test_views_write_through_and_copies_do_not(np):
    a = np.zeros((4, 6), dtype=np.float32)
    t = wick.from_numpy(a)
    v = t[1:3, 2:]  # unit steps: a view
    v[0, 0] = 5
    assert a[1, 2] == 5
    t[..., 5][0] = 7
    assert a[0, 5] == 7
    assert t[:].tolist() == a.tolist() and t[...].shape == (4, 6)
    w = t[:]
    w[3, 3] = 1
    assert a[3, 3] == 1  # t[:] is a view too
    for copy in (t[::2], t[[0, 1]], t[t > 0], t[::-1]):
        before = a.copy()
        copy[0] = 99  # writes the copy only
        assert np.array_equal(a, before)


def value_for(np, shape, kind, dtype):
    rng = np.random.default_rng(0)
    if kind == "number":
        return -3
    if kind == "full":
        return (rng.integers(-9, 9, size=shape)).astype(dtype)
    if kind == "broadcast":
        return (rng.integers(-9, 9, size=shape[-1:] if shape else ())).astype(dtype)
    if kind == "tensor":
        return wick.from_numpy(rng.integers(-9, 9, size=shape).astype(dtype))
    if kind == "list":
        if 0 in shape:
            return np.zeros(shape, dtype)
        return rng.integers(-9, 9, size=shape).astype(dtype).tolist()


@pytest.mark.parametrize("kind", ["number", "full", "broadcast", "tensor", "list"])
def test_setitem_matches_numpy(np, kind):
    a0 = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    for k in keys(np):
        ref = a0.copy()
        t = wick.from_numpy(a0.copy())
        v = value_for(np, ref[k].shape, kind, np.float32)
        ref[k] = np.asarray(v) if isinstance(v, wick.Tensor) else v
        t[k] = v
        assert np.array_equal(as_np(np, t), ref), k


@pytest.mark.parametrize("dtype", ["f64", "f16", "i32", "i64", "u8"])
def test_get_and_set_over_dtypes(np, dtype):
    npdt = {"f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64, "u8": np.uint8}[dtype]
    a = np.arange(24).reshape(2, 3, 4).astype(npdt)
    t = wick.from_numpy(a.copy())
    assert t.dtype is getattr(wick, dtype)
    for k in ((S, [2, 0]), ([1, 0], S, slice(None, None, 2)), a > 5, (slice(None, None, -1), 1)):
        assert np.array_equal(as_np(np, t[k]), a[k])
        ref = a.copy()
        ref[k] = 7
        t2 = wick.from_numpy(a.copy())
        t2[k] = 7
        assert np.array_equal(as_np(np, t2), ref)
    # a value of another dtype converts (as numpy and torch do)
    ref = a.copy()
    ref[0, [0, 2]] = np.array([[1.0], [2.0]])
    t[0, [0, 2]] = np.array([[1.0], [2.0]])
    assert np.array_equal(as_np(np, t), ref)


def test_bf16(torch):
    tt = torch.arange(12, dtype=torch.float32).reshape(3, 4).to(torch.bfloat16)
    t = wick.tensor(tt.float().tolist(), dtype="bf16")
    assert t[[2, 0], ::2].tolist() == tt[[2, 0], ::2].float().tolist()
    t[t > 5] = -1
    tt[tt > 5] = -1
    assert t.tolist() == tt.float().tolist()


def test_setitem_through_transposed_views(np):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    ref = base.copy()
    t = wick.from_numpy(base.copy())
    tv, rv = t.T, ref.T  # (5, 4, 3), strides reversed: the D dims do not merge in place
    for k, v in (((S, [0, 2], [1, 2]), 7.0), (([1, 2], S, slice(None, None, 2)), -5.0), ((rv > 40), 0.0),
                 ((slice(None, None, 2), slice(None, None, 3)), np.arange(18, dtype=np.float32).reshape(3, 2, 3))):
        tv[k] = v
        rv[k] = v
        assert np.array_equal(as_np(np, t), ref), k


def test_mask_tensor_assignment(np):
    # t[t > x] = number: the whole-shape mask form (masked_fill written back), strided targets too
    a = np.arange(-6, 6, dtype=np.float32).reshape(3, 4)
    for tv, rv in ((lambda t: t, lambda r: r), (lambda t: t.T, lambda r: r.T), (lambda t: t[:, 1:], lambda r: r[:, 1:])):
        t = wick.from_numpy(a.copy())
        ref = a.copy()
        tv(t)[tv(t) > 1] = -9
        rv(ref)[rv(ref) > 1] = -9
        tv(t)[tv(t) < -3] = 2.5
        rv(ref)[rv(ref) < -3] = 2.5
        assert np.array_equal(as_np(np, t), ref)
    t = wick.from_numpy(a.copy())
    t[t > 0] = wick.tensor([1.0])  # a tensor value takes the general path
    ref = a.copy()
    ref[ref > 0] = 1
    assert np.array_equal(as_np(np, t), ref)


def test_duplicates_and_empty(np):
    a = np.zeros(4, dtype=np.float32)
    t = wick.from_numpy(a)
    t[[0, 0, 2]] = np.array([1, 2, 3], dtype=np.float32)
    assert a.tolist() == [2, 0, 3, 0]  # the last write wins, as numpy
    t[[]] = 5
    t[t > 100] = 5
    assert a.tolist() == [2, 0, 3, 0]
    e = wick.zeros(0, 3)
    assert e[[]].shape == (0, 3) and e[:, [1, 2]].shape == (0, 2) and e[e > 0].shape == (0,)
    one = wick.tensor([4.0])
    assert one[[0, 0]].tolist() == [4, 4] and one[one > 3].tolist() == [4] and one[::-1].tolist() == [4]
    s = wick.tensor(2.0)
    assert s[None].shape == (1,) and s[...].item() == 2 and s[True].shape == (1,)


def test_index_errors(np):
    t = wick.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="too many indices"):
        t[[0], [0], [0]]
    with pytest.raises(wick.IndexError, match="out of range"):
        t[3]
    with pytest.raises(wick.IndexError):
        t[:, -5]
    with pytest.raises(wick.IndexError, match="out of range"):
        t[[0, 3]]
    with pytest.raises(wick.IndexError, match="out of range"):
        t[:, [-5]]
    with pytest.raises(wick.IndexError):
        t[[0, 3]] = 1.0
    with pytest.raises(IndexError):
        t[1.5]
    with pytest.raises(IndexError):
        t["x"]
    with pytest.raises(IndexError, match="integer or boolean"):
        t[np.array([0.0])]
    with pytest.raises(IndexError, match="integer or boolean"):
        t[[0, 1.5]]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(IndexError, match="broadcast"):
        t[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="boolean index"):
        t[np.array([True, False])]
    with pytest.raises(TypeError, match="deletion"):
        del t[0]
    with pytest.raises(wick.ShapeError):
        t[[0, 1]] = wick.ones(3, 4)  # the value does not broadcast to (2, 4)
    assert t.tolist() == np.arange(12).reshape(3, 4).tolist()  # nothing was written


def test_writes_into_read_only_memory_raise(np):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    a.flags.writeable = False
    t = wick.from_numpy(a)
    for k in (0, (S, 1), slice(None, None, 2), [0, 2], t > 3, (slice(None, None, -1), [1])):
        with pytest.raises(wick.ArgError):
            t[k] = 1.0
        with pytest.raises(wick.ArgError):
            t.T[t.T > 3 if isinstance(k, wick.Tensor) else k] = 1.0
    assert np.array_equal(a, np.arange(12).reshape(3, 4))
    assert t[[0, 2]].tolist() == a[[0, 2]].tolist()  # reads work


def test_no_leak_over_100k_calls(np, rss):
    t = wick.zeros(6, 6)
    ids = np.array([1, 3])
    m = t > -1

    def once():
        t[ids]
        t[::2, [0, 5]]
        t[m] = 1.0
        t[[0, 1], 1:] = 2.0
        t[::-2] = t[1::2]

    for _ in range(2000):
        once()
    before = rss()
    for _ in range(20000):
        once()  # 100k index operations
    assert rss() - before < 4, "indexing leaks"
