"""Reductions, scans and orderings from Python (python/src/ops_reduce.c)
against numpy / torch: every op of WK_REDUCE_OPS with dim None / int /
negative / list and keepdim both ways on a non-contiguous input, over float
and integer dtypes; var / std, logsumexp, norm, amax / amin, cumsum /
cumprod, sort / argsort / topk with ties; errors; a leak check."""
import ast
import math
import os
import re

import pytest

import wick


def assert_signature_docs(objs, names):
    """Each doc's first line is a valid Python signature of that name (the
    stub generator parses it)."""
    for obj in objs:
        for n in names:
            first = getattr(obj, n).__doc__.split("\n", 1)[0]
            assert first.startswith(n + "("), (obj, n, first)
            ast.parse("def %s: pass" % first)

DIMS = [None, 0, 1, -1, -2, [0, 2], (2, 0), [0, 1, 2], ()]


def reduce_ops(source_dir):
    with open(os.path.join(source_dir, "include", "wick", "wick_ops.h")) as f:
        body = f.read().split("#define WK_REDUCE_OPS(X)", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"X\(WK_REDUCE_\w+,\s*(\w+),\s*(\w+)\)", body)


def axis(dim):
    if dim is None or dim == ():
        return None
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def f64(np, t):
    return np.asarray(t.to("f64").numpy())


@pytest.fixture(scope="module")
def data(np):
    """A (3, 4, 5) non-contiguous view: a (5, 3, 4) array seen as transposed,
    distinct values (no ties for arg ops)."""
    rng = np.random.default_rng(7)
    base = rng.permutation(60).reshape(5, 3, 4).astype(np.float64) / 8 - 3
    return base.transpose(1, 2, 0)


NP = {"sum": "sum", "mean": "mean", "max": "max", "min": "min", "prod": "prod", "any": "any", "all": "all"}


def test_the_list_is_covered(source_dir):
    names = [n for n, _ in reduce_ops(source_dir)]
    assert sorted(set(names) - set(NP) - {"argmax", "argmin"}) == [], "a new reduction needs an oracle here"
    for n in names:
        assert getattr(wick.Tensor, n).__doc__.startswith(n + "(dim=None, keepdim=False)")
        assert getattr(wick, n).__doc__.startswith(n + "(input, /, dim=None, keepdim=False)")


@pytest.mark.parametrize("dt", ["f32", "f64", "f16", "bf16"])
def test_reductions_float(np, data, dt):
    def strided(values):  # values (3, 4, 5) in dt, as a non-contiguous view
        if dt == "bf16":  # a bf16 copy seen through a transpose
            return wick.tensor(np.ascontiguousarray(values.transpose(0, 2, 1))).to("bf16").mT
        # numpy keeps the permuted layout of data in astype; from_numpy shares it
        return wick.from_numpy(values.astype({"f32": np.float32, "f64": np.float64, "f16": np.float16}[dt]))

    w, ws = strided(data), strided(data / 4 + 1)  # ws: prod stays moderate
    assert w.shape == (3, 4, 5) and not w.is_contiguous() and not ws.is_contiguous()
    x = f64(np, w)
    tol = {"f32": 1e-5, "f64": 1e-12, "f16": 4e-3, "bf16": 2e-2}[dt]
    for name, npname in NP.items():
        for dim in DIMS:
            for keepdim in (False, True):
                src, arr = (ws, f64(np, ws)) if name == "prod" else (w, x)
                ref = getattr(np, npname)(arr, axis=axis(dim), keepdims=keepdim)
                got = getattr(src, name)(dim=dim, keepdim=keepdim)
                if isinstance(dim, int) and name in ("max", "min"):
                    got, idx = got  # (values, indices)
                    np.testing.assert_array_equal(
                        idx.numpy(), getattr(np, "arg" + name)(arr, axis=dim) if not keepdim else
                        np.expand_dims(getattr(np, "arg" + name)(arr, axis=dim), dim))
                    assert idx.dtype == "i64"
                assert got.shape == np.shape(ref), (name, dim, keepdim)
                if name in ("any", "all"):
                    assert got.dtype == "u8"
                    np.testing.assert_array_equal(got.numpy(), ref.astype(np.uint8))
                else:
                    assert got.dtype == dt
                    np.testing.assert_allclose(f64(np, got), ref, rtol=tol, atol=tol, err_msg="%s %s" % (name, dim))
                # the module form agrees
                mod = getattr(wick, name)(src, dim, keepdim=keepdim)
                mod = mod[0] if isinstance(mod, tuple) else mod
                np.testing.assert_array_equal(mod.to("f64").numpy(), got.to("f64").numpy())


@pytest.mark.parametrize("dt", ["i32", "i64", "u8", "i16"])
def test_reductions_integer(np, dt):
    npdt = {"i32": np.int32, "i64": np.int64, "u8": np.uint8, "i16": np.int16}[dt]
    a = (np.arange(24).reshape(2, 3, 4) % 7 + 1).astype(npdt).transpose(2, 0, 1)  # non-contiguous
    w = wick.from_numpy(a)
    assert not w.is_contiguous()
    for dim in DIMS:
        for keepdim in (False, True):
            ax = axis(dim)
            for name in ("sum", "prod"):
                got = getattr(w, name)(dim, keepdim)
                assert got.dtype == "i64", (name, dt)  # torch: integer sums give i64
                np.testing.assert_array_equal(got.numpy(), getattr(np, name)(a.astype(np.int64), axis=ax,
                                                                             keepdims=keepdim))
            for name in ("max", "min", "any", "all"):
                got = getattr(w, name)(dim=dim, keepdim=keepdim)
                got = got.values if isinstance(dim, int) and name in ("max", "min") else got
                ref = getattr(np, name)(a, axis=ax, keepdims=keepdim)
                assert got.dtype == (dt if name in ("max", "min") else "u8")
                np.testing.assert_array_equal(got.numpy(), ref.astype(got.numpy().dtype))
    # a u8 mask's sum past 255 (wick alone would wrap in u8)
    m = wick.ones(300, dtype="u8")
    assert m.sum().item() == 300 and m.sum().dtype == "i64"
    with pytest.raises(wick.DTypeError):
        w.mean()
    with pytest.raises(wick.DTypeError):
        w.mean(dim=0)


def test_argmax_argmin(np, data):
    w = wick.from_numpy(data)
    for name in ("argmax", "argmin"):
        f = getattr(np, name)
        got = getattr(w, name)()
        assert got.shape == () and got.dtype == "i64" and got.item() == f(data)  # flattened, like torch
        assert getattr(wick, name)(w).item() == f(data)
        k = getattr(w, name)(keepdim=True)
        assert k.shape == (1, 1, 1) and k.item() == f(data)
        for d in (0, 1, 2, -1):
            np.testing.assert_array_equal(getattr(w, name)(d).numpy(), f(data, axis=d))
            np.testing.assert_array_equal(getattr(w, name)(dim=d, keepdim=True).numpy(),
                                          np.expand_dims(f(data, axis=d), d))
    # ties: the first index
    t = wick.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    assert t.argmax(1).tolist() == [1, 0] and t.argmin(1).tolist() == [0, 2] and t.max(1).indices.tolist() == [1, 0]
    with pytest.raises(TypeError):
        w.argmax(dim=[0, 1])


def test_max_min_forms(np, data, torch):
    w, t = wick.from_numpy(data), torch.from_numpy(data)
    v, i = w.max(dim=1)  # unpacks like torch's namedtuple
    tv, ti = t.max(dim=1)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    r = w.min(-1, True)
    assert type(r).__name__ == "min" and r.values.shape == (3, 4, 1) and r.indices.shape == (3, 4, 1)
    np.testing.assert_array_equal(r.indices.numpy(), t.min(-1, True).indices.numpy())
    # max(other) is maximum; wick.max(a, b) too
    o = wick.from_numpy(-data + 0.1)
    np.testing.assert_array_equal(w.max(o).numpy(), np.maximum(data, -data + 0.1))
    np.testing.assert_array_equal(wick.min(w, o).numpy(), np.minimum(data, -data + 0.1))
    # a list of dims: values only
    assert w.max(dim=[0, 1]).shape == (5,)
    np.testing.assert_array_equal(w.amax(dim=(0, 2)).numpy(), data.max(axis=(0, 2)))
    np.testing.assert_array_equal(w.amin().numpy(), data.min())
    np.testing.assert_array_equal(wick.amax(w, 1, keepdim=True).numpy(), data.max(axis=1, keepdims=True))
    np.testing.assert_array_equal(wick.amin(w, dim=-1).numpy(), data.min(axis=-1))
    with pytest.raises(wick.ShapeError):  # no identity for an empty max
        wick.zeros(0, 3).max(dim=0)
    assert wick.zeros(0, 3).sum(0).tolist() == [0, 0, 0]
    assert wick.zeros(3, 0).sum(1).tolist() == [0, 0, 0]


def test_one_element_and_rank0(np):
    t = wick.tensor([[2.5]])
    assert t.sum().item() == 2.5 and t.max().item() == 2.5 and t.mean(dim=(0, 1)).item() == 2.5
    assert t.argmax().item() == 0
    s = wick.tensor(3.0)
    assert s.sum().item() == 3.0 and s.sum().shape == () and s.prod().item() == 3.0


def test_var_std(np, data, torch):
    w, t = wick.from_numpy(data.astype(np.float32)), torch.from_numpy(data.astype(np.float32))
    for dim in (None, 0, -1, [0, 2]):
        for keepdim in (False, True):
            for ddof in (0, 1):
                ax = axis(dim)
                for name in ("var", "std"):
                    ref = getattr(np, name)(data, axis=ax, ddof=ddof, keepdims=keepdim)
                    for got in (getattr(w, name)(dim, bool(ddof), keepdim),
                                getattr(w, name)(dim=dim, correction=ddof, keepdim=keepdim),
                                getattr(wick, name)(w, dim, unbiased=bool(ddof), keepdim=keepdim)):
                        assert got.dtype == "f32" and got.shape == np.shape(ref)
                        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(w.var(False).numpy(), t.var(False).numpy(), rtol=1e-5)  # torch's var(unbiased)
    np.testing.assert_allclose(w.std().numpy(), t.std().numpy(), rtol=1e-5)
    h = wick.tensor(data).to("f16")
    np.testing.assert_allclose(f64(np, h.var(1)), np.var(f64(np, h), axis=1, ddof=1), rtol=3e-3)
    assert math.isnan(wick.tensor([1.0]).var().item())  # no degrees of freedom left
    with pytest.raises(ValueError):
        w.var(correction=2)
    with pytest.raises(TypeError):
        w.var(unbiased=True, correction=1)
    with pytest.raises(wick.DTypeError):
        wick.tensor([1, 2]).var()


def test_logsumexp_norm(np, data, torch):
    w, t = wick.from_numpy(data), torch.from_numpy(data)
    for dim in (0, -1, [0, 2]):
        for keepdim in (False, True):
            ref = torch.logsumexp(t, dim=dim, keepdim=keepdim).numpy()
            np.testing.assert_allclose(w.logsumexp(dim, keepdim).numpy(), ref, rtol=1e-12)
            np.testing.assert_allclose(wick.logsumexp(w, dim=dim, keepdim=keepdim).numpy(), ref, rtol=1e-12)
            np.testing.assert_allclose(w.log_sum_exp(dim, keepdim=keepdim).numpy(), ref, rtol=1e-12)
    np.testing.assert_allclose(w.logsumexp().numpy(), torch.logsumexp(t.flatten(), 0).numpy(), rtol=1e-12)
    f = wick.from_numpy(data.astype(np.float32))
    np.testing.assert_allclose(f.logsumexp(1).numpy(), torch.logsumexp(t.float(), 1).numpy(), rtol=1e-5)
    lin = torch.linalg.vector_norm
    for p in (2, 1, 3, 0.5, math.inf, -math.inf, 0):
        for dim in (None, 1, [0, 2]):
            for keepdim in (False, True):
                ref = lin(t, ord=p, dim=dim, keepdim=keepdim).numpy()
                np.testing.assert_allclose(w.norm(p, dim, keepdim).numpy(), ref, rtol=1e-10, err_msg=str(p))
    np.testing.assert_allclose(w.norm().numpy(), t.norm().numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.norm("fro", dim=1).numpy(), t.norm(p="fro", dim=1).numpy(), rtol=1e-12)
    np.testing.assert_allclose(wick.norm(f, p=1, dim=0).numpy(), lin(t.float(), 1, dim=0).numpy(), rtol=1e-5)
    with pytest.raises(ValueError):
        w.norm("nuc")
    with pytest.raises(wick.DTypeError):
        wick.tensor([1, 2]).norm()


def test_scans(np, data):
    w = wick.from_numpy(data)
    for dim in (0, 1, 2, -1):
        np.testing.assert_allclose(w.cumsum(dim).numpy(), np.cumsum(data, axis=dim), rtol=1e-12)
        np.testing.assert_allclose(wick.cumsum(w, dim=dim).numpy(), np.cumsum(data, axis=dim), rtol=1e-12)
        np.testing.assert_allclose(w.cumprod(dim).numpy(), np.cumprod(data, axis=dim), rtol=1e-12)
        np.testing.assert_allclose(wick.cumprod(w, dim).numpy(), np.cumprod(data, axis=dim), rtol=1e-12)
    i = wick.ones(300, dtype="u8")
    c = i.cumsum(0)
    assert c.dtype == "i64" and c[-1].item() == 300
    assert wick.tensor([1, 2, 3], dtype="i32").cumprod(0).tolist() == [1, 2, 6]
    d = wick.tensor([1, 2, 3]).cumsum(0, dtype="f32")
    assert d.dtype == "f32" and d.tolist() == [1.0, 3.0, 6.0]
    h = wick.tensor(data).to("bf16")
    np.testing.assert_allclose(f64(np, h.cumsum(1)), np.cumsum(f64(np, h), axis=1), rtol=2e-2, atol=5e-2)
    assert wick.zeros(0).cumsum(0).shape == (0,)
    with pytest.raises(TypeError):
        w.cumsum()
    with pytest.raises(wick.IndexError):
        w.cumsum(3)


def test_sort_argsort_topk(np, torch):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, (3, 10)).astype(np.float32)  # many ties
    w, t = wick.tensor(a), torch.from_numpy(a)
    for dim in (0, 1, -1):
        for desc in (False, True):
            v, i = w.sort(dim, desc)
            tv, ti = torch.sort(t, dim=dim, descending=desc, stable=True)
            np.testing.assert_array_equal(v.numpy(), tv.numpy())
            np.testing.assert_array_equal(i.numpy(), ti.numpy())  # stable: ties keep their order
            assert i.dtype == "i64"
            np.testing.assert_array_equal(w.argsort(dim=dim, descending=desc).numpy(), ti.numpy())
            np.testing.assert_array_equal(wick.sort(w, dim, descending=desc).indices.numpy(), ti.numpy())
            np.testing.assert_array_equal(wick.argsort(w, dim, desc).numpy(), ti.numpy())
    r = w.sort()
    assert type(r).__name__ == "sort" and r.values.shape == (3, 10)
    # sort of a non-contiguous view
    np.testing.assert_array_equal(w.T.sort(0).values.numpy(), np.sort(a.T, axis=0))
    # topk: values like torch, ties by the lower index (numpy's stable order)
    for k in (1, 3, 10):
        for largest in (True, False):
            v, i = w.topk(k, largest=largest)
            order = np.argsort(-a if largest else a, axis=1, kind="stable")[:, :k]
            np.testing.assert_array_equal(i.numpy(), order)
            np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, order, 1))
            np.testing.assert_array_equal(v.numpy(), torch.topk(t, k, largest=largest).values.numpy())
    v, i = wick.topk(w, 2, dim=0)
    np.testing.assert_array_equal(v.numpy(), torch.topk(t, 2, dim=0).values.numpy())
    assert type(w.topk(1)).__name__ == "topk"
    nan = wick.tensor([2.0, float("nan"), 1.0])
    assert nan.sort().indices.tolist() == [2, 0, 1] and nan.sort(descending=True).indices.tolist() == [1, 0, 2]
    with pytest.raises(wick.Error):
        w.topk(11)
    with pytest.raises(TypeError):
        w.topk()
    with pytest.raises(TypeError):
        w.topk(1.5)
    with pytest.raises(wick.IndexError):
        w.sort(2)


def test_bad_arguments(np, data):
    w = wick.from_numpy(data)
    for name in ("sum", "mean", "max", "prod", "any", "var", "logsumexp", "amax"):
        with pytest.raises(wick.IndexError):
            getattr(w, name)(dim=3)
        with pytest.raises(wick.IndexError):
            getattr(w, name)(dim=-4)
        with pytest.raises(TypeError):
            getattr(w, name)(dim=1.5)
        with pytest.raises(TypeError):
            getattr(w, name)(dim="a")
        with pytest.raises(TypeError):
            getattr(w, name)(bogus=1)
    with pytest.raises(wick.ArgError):  # a dim listed twice
        w.sum(dim=[0, 0])
    with pytest.raises(TypeError):
        wick.sum([1, 2])
    with pytest.raises(TypeError):
        wick.sum()
    with pytest.raises(TypeError):
        w.max(w, keepdim=True)


def test_no_leak(rss):
    a = wick.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    for _ in range(2000):
        a.sum(1)
    before = rss()
    for _ in range(100_000):
        a.sum(1)
        a.max(dim=0)
        a.topk(2)
        a.var(0)
    grown = rss() - before
    assert grown < 4, "RSS grew %.1f MiB over 100k calls" % grown


def test_docstrings_are_signatures(source_dir):
    both = [n for n, _ in reduce_ops(source_dir)] + [
        "amax", "amin", "var", "std", "logsumexp", "log_sum_exp", "norm", "cumsum", "cumprod", "sort", "argsort",
        "topk"]
    assert_signature_docs([wick.Tensor, wick], both)
