"""Elementwise ops from Python (python/src/ops_elementwise.c) against numpy /
torch: every unary op of the WK_UNARY_OPS list (read from the header, so a new
op without an oracle here fails), binary ops and comparisons with tensors and
numbers, broadcasting, in-place forms, where / clamp / affine / elu / pow,
fill_ / zero_ / copy_, errors, and a leak check."""
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

FLOAT_DTYPES = ["f32", "f64", "f16", "bf16"]
# rtol, atol per dtype: output rounding plus a few ulp of libm-class math
TOL = {"f64": (1e-12, 1e-13), "f32": (1e-5, 1e-6), "f16": (2e-3, 1e-3), "bf16": (1e-2, 8e-3)}


def header_ops(source_dir, macro):
    """(name, integer column) of every line of one op list in wick_ops.h."""
    with open(os.path.join(source_dir, "include", "wick", "wick_ops.h")) as f:
        text = f.read()
    body = text.split("#define %s(X)" % macro, 1)[1].split("\n\n", 1)[0]
    return re.findall(r"X\(WK_\w+,\s*(\w+),\s*([^,)\s]+)", body)


def f64(np, t):
    """A wick tensor's values as a float64 numpy array (any dtype, any layout)."""
    return np.asarray(t.to("f64").numpy())


def as_wick(np, arr, dt):
    """A wick tensor of dtype dt holding arr's values (rounded to dt)."""
    return wick.tensor(np.ascontiguousarray(arr, dtype=np.float64)).to(dt)


@pytest.fixture(scope="module")
def oracles(torch):
    F = torch.nn.functional
    return {
        "exp": torch.exp, "log": torch.log, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh,
        "abs": torch.abs, "neg": torch.neg, "recip": torch.reciprocal, "sqr": torch.square, "sqrt": torch.sqrt,
        "gelu": lambda x: F.gelu(x, approximate="tanh"), "gelu_erf": F.gelu, "erf": torch.erf,
        "relu": torch.relu, "silu": F.silu, "ceil": torch.ceil, "floor": torch.floor,
        "round": lambda x: torch.sign(x) * torch.floor(torch.abs(x) + 0.5),  # half away from zero
        "sign": torch.sign, "sigmoid": torch.sigmoid,
    }


POSITIVE_ONLY = {"log", "sqrt"}


def unary_input(np, name):
    x = np.concatenate([np.linspace(-3, 3, 18), [-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]]).reshape(4, 6)
    return np.abs(x) + 0.125 if name in POSITIVE_ONLY else x


def check_unary(np, torch, oracles, name, w_in, dt):
    rtol, atol = TOL[dt]
    ref = oracles[name](torch.from_numpy(f64(np, w_in))).numpy()
    got = getattr(w_in, name)()
    assert got.dtype == dt and got.shape == w_in.shape, name
    np.testing.assert_allclose(f64(np, got), ref, rtol=rtol, atol=atol, err_msg="%s %s" % (name, dt))
    np.testing.assert_allclose(f64(np, getattr(wick, name)(w_in)), ref, rtol=rtol, atol=atol)


def test_every_unary_op_has_an_oracle(source_dir, oracles):
    names = [n for n, _ in header_ops(source_dir, "WK_UNARY_OPS")]
    assert len(names) >= 20
    assert sorted(set(names) - set(oracles)) == [], "a new unary op needs an oracle in this file"
    for n in names:
        assert callable(getattr(wick.Tensor, n)) and callable(getattr(wick.Tensor, n + "_"))
        assert getattr(wick, n).__doc__.startswith(n + "(input)")
        assert getattr(wick.Tensor, n).__doc__.startswith(n + "()")


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
def test_unary_float_dtypes(np, torch, oracles, source_dir, dt):
    for name, _ in header_ops(source_dir, "WK_UNARY_OPS"):
        check_unary(np, torch, oracles, name, as_wick(np, unary_input(np, name), dt), dt)


def test_unary_non_contiguous_empty_and_one(np, torch, oracles, source_dir):
    for name, _ in header_ops(source_dir, "WK_UNARY_OPS"):
        x = as_wick(np, unary_input(np, name), "f32")
        check_unary(np, torch, oracles, name, x.T, "f32")          # transposed
        check_unary(np, torch, oracles, name, x[1:, ::2], "f32")   # sliced with a step
        check_unary(np, torch, oracles, name, x[0, 2:3], "f32")    # one element
        e = getattr(wick.zeros(0, 3), name)()
        assert e.shape == (0, 3) and e.dtype == "f32"


INT_ORACLE = {
    "abs": lambda np, x: np.abs(x), "neg": lambda np, x: -x, "sqr": lambda np, x: x * x,
    "relu": lambda np, x: np.maximum(x, 0).astype(x.dtype), "sign": lambda np, x: np.sign(x).astype(x.dtype),
}


@pytest.mark.parametrize("dt", ["i16", "i32", "i64", "u8", "u32"])
def test_unary_integer_dtypes(np, source_dir, dt):
    npdt = {"i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8, "u32": np.uint32}[dt]
    vals = np.array([[0, 1, 2, 3, 7, 15], [20, 30, 40, 99, 100, 127]], dtype=np.int64)
    if dt[0] == "i":
        vals[:, ::2] *= -1
        vals[0, 0] = np.iinfo(npdt).min  # abs / neg of the minimum wrap to the minimum
    x = vals.astype(npdt)
    w = wick.tensor(x)
    assert w.dtype == dt
    with np.errstate(over="ignore"):
        for name, ints in header_ops(source_dir, "WK_UNARY_OPS"):
            if ints == "INT_NONE":
                with pytest.raises(wick.DTypeError):
                    getattr(w, name)()
                continue
            got = getattr(w, name)()
            assert got.dtype == dt, name
            ref = x if ints == "INT_ID" else INT_ORACLE[name](np, x)
            np.testing.assert_array_equal(got.numpy(), ref, err_msg="%s %s" % (name, dt))


def test_unary_in_place_and_aliases(np, torch, oracles, source_dir):
    for name, _ in header_ops(source_dir, "WK_UNARY_OPS"):
        src = unary_input(np, name)
        y = as_wick(np, src, "f64")
        r = getattr(y, name + "_")()
        assert r is y
        ref = oracles[name](torch.from_numpy(src)).numpy()
        np.testing.assert_allclose(f64(np, y), ref, rtol=1e-12, atol=1e-13)
    # in place through a view writes the base's memory
    base = wick.tensor([[1.0, 4.0], [9.0, 16.0]])
    base[:, 1].sqrt_()
    assert base.tolist() == [[1.0, 2.0], [9.0, 4.0]]
    x = wick.tensor([0.5, -2.0, 4.0])
    assert x.reciprocal().tolist() == [2.0, -0.5, 0.25] and wick.reciprocal(x).tolist() == [2.0, -0.5, 0.25]
    assert x.square().tolist() == [0.25, 4.0, 16.0] and wick.square(x).tolist() == [0.25, 4.0, 16.0]
    assert x.negative().tolist() == [-0.5, 2.0, -4.0] and wick.negative(x).tolist() == [-0.5, 2.0, -4.0]
    y = wick.tensor([2.0])
    assert y.square_() is y and y.tolist() == [4.0]
    assert wick.tensor([-2.5, 2.5, 0.5]).round().tolist() == [-3.0, 3.0, 1.0]  # half away from zero


def test_unary_read_only_and_bad_arguments(np):
    a = np.arange(4, dtype=np.float32)
    a.setflags(write=False)
    t = wick.from_numpy(a)
    assert t.exp().shape == (4,)
    with pytest.raises(wick.Error):
        t.exp_()
    assert a.tolist() == [0, 1, 2, 3]
    with pytest.raises(TypeError):
        wick.exp(3.0)
    with pytest.raises(TypeError):
        wick.exp("x")
    with pytest.raises(TypeError):
        wick.tensor([1.0]).exp(1)


BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow"]


@pytest.fixture(scope="module")
def torch_binary(torch):
    return {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
            "maximum": torch.maximum, "minimum": torch.minimum, "pow": torch.pow}


def test_binary_list_is_covered(source_dir):
    assert sorted(n for n, _ in header_ops(source_dir, "WK_BINARY_OPS")) == sorted(BINARY)


@pytest.mark.parametrize("dt", FLOAT_DTYPES)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)),
                                    ((2, 3), ()), ((1,), (2, 3)), ((0, 4), (4,)), ((1,), (1,))])
def test_binary_broadcasting(np, torch, torch_binary, dt, shapes):
    rng = np.random.default_rng(1)
    sa, sb = shapes
    a = rng.uniform(0.5, 2.0, sa)  # positive: pow is defined
    b = rng.uniform(-2.0, 2.0, sb)
    wa, wb = as_wick(np, a, dt), as_wick(np, b, dt)
    ta, tb = torch.from_numpy(f64(np, wa)), torch.from_numpy(f64(np, wb))
    rtol, atol = TOL[dt]
    for name in BINARY:
        ref = torch_binary[name](ta, tb).numpy()
        for got in (getattr(wa, name)(wb), getattr(wick, name)(wa, wb), getattr(wick, name)(input=wa, other=wb)):
            assert got.dtype == dt and got.shape == ref.shape, name
            np.testing.assert_allclose(f64(np, got), ref, rtol=rtol, atol=atol, err_msg=name)


def test_binary_non_contiguous(np, torch, torch_binary):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.5, 2, (4, 6)), rng.uniform(-2, 2, (6, 4))
    wa, wb = wick.tensor(a), wick.tensor(b)
    for name in BINARY:
        ref = torch_binary[name](torch.from_numpy(a[:, ::2]), torch.from_numpy(b.T[:, ::2])).numpy()
        np.testing.assert_allclose(getattr(wa[:, ::2], name)(wb.T[:, ::2]).numpy(), ref, rtol=1e-12)


def test_binary_numbers(np, torch, torch_binary):
    a = np.array([[0.5, 1.0, 2.0], [3.0, 4.0, 8.0]])
    w = wick.tensor(a, dtype="f32")
    ta = torch.tensor(a, dtype=torch.float32)
    for name in BINARY:
        f = torch_binary[name]
        for s in (2, 2.5, -1.5, True):
            if name == "pow" and s == -1.5:
                continue
            np.testing.assert_allclose(getattr(w, name)(s).numpy(), f(ta, torch.tensor(float(s))).numpy(), rtol=1e-6, err_msg=name)
            # reversed: a number on the left takes the tensor's dtype
            rev = getattr(wick, name)(s, w)
            assert rev.dtype == "f32"
            np.testing.assert_allclose(rev.numpy(), f(torch.tensor(float(s)), ta).numpy(), rtol=1e-6, err_msg=name)
    # lists and arrays on either side
    assert wick.add(w, [1, 1, 1]).tolist() == (ta + 1).tolist()
    assert wick.sub([10.0, 10.0, 10.0], w).tolist() == (10 - ta).tolist()
    assert wick.mul(np.float32(2), w).tolist() == (ta * 2).tolist()
    # numpy scalars are numbers (not rank-0 tensors of numpy's dtype)
    for s in (np.int64(3), np.float64(0.5), np.float16(2), np.int32(-1), np.uint8(2)):
        assert w.mul(s).dtype == "f32" and w.mul(s).tolist() == (ta * float(s)).tolist()
        assert wick.sub(s, w).tolist() == (float(s) - ta).tolist()
    i = wick.tensor([1, 2])
    assert i.add(np.int32(1)).dtype == "i64" and i.add(np.float32(0.5)).tolist() == [1.5, 2.5]
    assert i.lt(np.float64(1.5)).tolist() == [1, 0]
    with pytest.raises(TypeError):  # complex numbers are not wick's
        w.mul(np.complex64(1))
    with pytest.raises(TypeError):
        w.mul(1j)


def test_binary_integers(np, torch):
    a = np.array([-7, -3, 0, 5, 9], dtype=np.int64)
    b = np.array([2, 2, 3, -2, 4], dtype=np.int64)
    w, v = wick.tensor(a), wick.tensor(b)
    assert w.add(v).tolist() == (a + b).tolist() and w.mul(3).dtype == "i64"
    assert w.div(v).tolist() == torch.div(torch.from_numpy(a), torch.from_numpy(b), rounding_mode="trunc").tolist()
    assert w.pow(2).tolist() == (a ** 2).tolist() and w.pow(2).dtype == "i64"
    assert w.maximum(v).tolist() == np.maximum(a, b).tolist()
    with pytest.raises(wick.DivZeroError):
        w.div(0)
    with pytest.raises(ZeroDivisionError):
        w.div(wick.zeros(5, dtype="i64"))
    with pytest.raises(wick.ArgError):
        w.pow(-1)
    # a Python float beside an integer tensor computes in f32 (torch's rule)
    for name, f in (("add", torch.add), ("mul", torch.mul), ("pow", torch.pow), ("maximum", None)):
        got = getattr(w, name)(0.5)
        assert got.dtype == "f32", name
        if f is not None:
            np.testing.assert_allclose(got.numpy(), f(torch.from_numpy(a), 0.5).numpy(), rtol=1e-6)
    assert w.maximum(0.5).tolist() == np.maximum(a, 0.5).tolist()
    assert wick.sub(0.5, w).tolist() == (0.5 - a).tolist()
    with pytest.raises(wick.DTypeError):  # the result is f32: it does not fit back into i64
        w.clone().add_(0.5)


def test_binary_in_place(np):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for name, ref in (("add_", a + a[0]), ("sub_", a - a[0]), ("mul_", a * a[0]), ("maximum_", np.maximum(a, 2))):
        w = wick.tensor(a)
        other = wick.tensor(a[0]) if name != "maximum_" else 2
        assert getattr(w, name)(other) is w
        np.testing.assert_allclose(w.numpy(), ref)
    w = wick.tensor(a + 1)
    assert w.div_(2.0) is w and w.tolist() == ((a + 1) / 2).tolist()
    assert w.pow_(2) is w and np.allclose(w.numpy(), ((a + 1) / 2) ** 2)
    # writing through a view changes the base
    w = wick.tensor(a)
    w[1].add_(10)
    assert w.tolist() == [[0, 1, 2], [13, 14, 15]]
    # the result must keep self's shape
    with pytest.raises(wick.ShapeError):
        wick.tensor(a[0]).add_(wick.tensor(a))


def test_binary_errors():
    a = wick.tensor([1.0, 2.0, 3.0])
    with pytest.raises(wick.ShapeError):
        a.add(wick.tensor([1.0, 2.0]))
    with pytest.raises(wick.DTypeError):
        a.add(wick.tensor([1.0, 2.0, 3.0], dtype="f64"))
    for bad in ("x", None, object()):
        with pytest.raises(TypeError):
            a.add(bad)
        with pytest.raises(TypeError):
            wick.mul(bad, a)
    with pytest.raises(TypeError):
        wick.add(a)
    with pytest.raises(TypeError):
        wick.add(a, a, a)
    with pytest.raises(TypeError):
        wick.add(a, other=a, alpha=2)


CMP = {"eq": "__eq__", "ne": "__ne__", "lt": "__lt__", "le": "__le__", "gt": "__gt__", "ge": "__ge__"}


def test_comparisons(np, source_dir):
    assert sorted(n for n, _ in header_ops(source_dir, "WK_CMP_OPS")) == sorted(CMP)
    a = np.array([[1.0, 2.0, 3.0], [4.0, 2.0, 0.0]])
    b = np.array([2.0, 2.0, 1.0])
    for dt in ("f32", "f16", "bf16", "i32"):
        wa, wb = as_wick(np, a, dt), as_wick(np, b, dt)
        for name, dunder in CMP.items():
            ref = getattr(a, dunder)(b).astype(np.uint8)
            for got in (getattr(wa, name)(wb), getattr(wick, name)(wa, wb)):
                assert got.dtype == "u8" and got.shape == (2, 3)
                np.testing.assert_array_equal(got.numpy(), ref, err_msg=name)
            np.testing.assert_array_equal(getattr(wa, name)(2).numpy(), getattr(a, dunder)(2).astype(np.uint8))
            np.testing.assert_array_equal(getattr(wa.T, name)(1).numpy(), getattr(a.T, dunder)(1).astype(np.uint8))
    # an integer tensor against a float: compared as floats (not rounded to the int)
    i = wick.tensor([0, 1, 2])
    assert i.lt(1.5).tolist() == [1, 1, 0] and i.eq(1.0).tolist() == [0, 1, 0] and i.gt(0.5).tolist() == [0, 1, 1]
    assert wick.tensor([16777217]).gt(16777216.5).tolist() == [1]  # exact (in f32 both sides are 2^24)
    assert wick.lt(0.5, i).tolist() == [0, 1, 1]
    with pytest.raises(wick.ShapeError):
        i.eq(wick.tensor([1, 2]))
    with pytest.raises(TypeError):
        i.lt("a")


def test_where(np):
    c = np.array([[1, 0, 1], [0, 0, 1]], dtype=np.uint8)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = -a
    wc, wa, wb = wick.tensor(c), wick.tensor(a), wick.tensor(b)
    np.testing.assert_array_equal(wick.where(wc, wa, wb).numpy(), np.where(c, a, b))
    np.testing.assert_array_equal(wa.where(wc, wb).numpy(), np.where(c, a, b))
    np.testing.assert_array_equal(wick.where(wc, wa, 7.5).numpy(), np.where(c, a, 7.5))
    np.testing.assert_array_equal(wick.where(wc, -1, wb).numpy(), np.where(c, -1, b))
    # broadcasting the condition and the values; a comparison as the condition
    np.testing.assert_array_equal(wick.where(wick.tensor([1, 0, 1]), wa, wick.tensor([9.0])).numpy(),
                                  np.where([1, 0, 1], a, 9.0))
    np.testing.assert_array_equal(wick.where(wa.gt(2), wa, 0).numpy(), np.where(a > 2, a, 0))
    np.testing.assert_array_equal(wick.where(wc.T, wa.T, 0.0).numpy(), np.where(c.T, a.T, 0))
    # an integer input beside a float number: f32
    w = wick.where(wick.tensor([1, 0]), wick.tensor([3, 4]), 0.5)
    assert w.dtype == "f32" and w.tolist() == [3.0, 0.5]
    with pytest.raises(wick.DTypeError):  # a float condition
        wick.where(wa, wa, wb)
    with pytest.raises(wick.ShapeError):
        wick.where(wick.tensor([1, 0]), wa, wb)
    with pytest.raises(TypeError):
        wick.where(wc, "a", wb)
    with pytest.raises(TypeError):
        wick.where(wc, wa)


def test_clamp(np, torch):
    a = np.linspace(-3, 3, 12).reshape(3, 4).astype(np.float32)
    w, t = wick.tensor(a), torch.from_numpy(a)
    for kw in ({"min": -1.0}, {"max": 0.5}, {"min": -1, "max": 1}):
        np.testing.assert_array_equal(w.clamp(**kw).numpy(), t.clamp(**kw).numpy())
        np.testing.assert_array_equal(wick.clamp(w, **kw).numpy(), t.clamp(**kw).numpy())
        np.testing.assert_array_equal(w.clip(**kw).numpy(), t.clamp(**kw).numpy())
    np.testing.assert_array_equal(w.clamp(-1, 1).numpy(), t.clamp(-1, 1).numpy())
    np.testing.assert_array_equal(w.T.clamp(0).numpy(), t.T.clamp(0).numpy())
    lo, hi = wick.tensor(a[0]), torch.from_numpy(a[0])
    np.testing.assert_array_equal(w.clamp(min=lo).numpy(), t.clamp(min=hi).numpy())
    np.testing.assert_array_equal(w.clamp(max=lo).numpy(), t.clamp(max=hi).numpy())
    np.testing.assert_array_equal(w.clamp(lo, 2.0).numpy(), torch.minimum(t.clamp(min=hi), torch.tensor(2.0)).numpy())
    # integers: int bounds stay integer, a float bound gives f32 (torch)
    i = wick.tensor([-5, 0, 5, 9])
    assert i.clamp(0, 6).tolist() == [0, 0, 5, 6] and i.clamp(0, 6).dtype == "i64"
    assert i.clamp(max=3).tolist() == [-5, 0, 3, 3]
    fc = i.clamp(0.5, 6.5)
    assert fc.dtype == "f32" and fc.tolist() == torch.tensor([-5, 0, 5, 9]).clamp(0.5, 6.5).tolist()
    y = wick.tensor(a)
    assert y.clamp_(max=0) is y and y.numpy().max() == 0
    with pytest.raises(ValueError):
        w.clamp()
    with pytest.raises(wick.ArgError):
        w.clamp(2, 1)
    with pytest.raises(TypeError):
        w.clamp(min="a")
    with pytest.raises(TypeError):
        w.clamp(1, 2, 3)


def test_affine_elu_powf(np, torch):
    a = np.linspace(-2, 2, 9).astype(np.float32)
    w, t = wick.tensor(a), torch.from_numpy(a)
    np.testing.assert_allclose(w.affine(2.0, -1.0).numpy(), a * 2 - 1, rtol=1e-6)
    np.testing.assert_allclose(wick.affine(w, mul=3).numpy(), a * 3, rtol=1e-6)
    np.testing.assert_allclose(w.affine(add=1).numpy(), a + 1, rtol=1e-6)
    assert wick.tensor([1, 2]).affine(3, 1).tolist() == [4, 7]
    for alpha in (1.0, 0.5):
        np.testing.assert_allclose(w.elu(alpha).numpy(), torch.nn.functional.elu(t, alpha).numpy(), rtol=1e-5,
                                   atol=1e-7)
        np.testing.assert_allclose(wick.elu(w, alpha=alpha).numpy(), torch.nn.functional.elu(t, alpha).numpy(),
                                   rtol=1e-5, atol=1e-7)
    pos = wick.tensor(np.abs(a) + 0.5)
    for e in (0.5, 2.0, -1.5, 3):
        np.testing.assert_allclose(pos.pow(e).numpy(), (torch.from_numpy(np.abs(a) + 0.5) ** e).numpy(), rtol=1e-5)
    np.testing.assert_allclose(wick.pow(2.0, w).numpy(), (2.0 ** t).numpy(), rtol=1e-6)
    with pytest.raises(wick.DTypeError):
        wick.tensor([1, 2]).elu()


def test_fill_zero_copy(np):
    w = wick.zeros(2, 3)
    assert w.fill_(2.5) is w and w.tolist() == [[2.5] * 3] * 2
    assert w.zero_() is w and w.tolist() == [[0.0] * 3] * 2
    w[:, 1].fill_(7)
    assert w.tolist() == [[0, 7, 0], [0, 7, 0]]
    # copy_: broadcast, converted dtype, lists and arrays
    assert w.copy_(wick.tensor([1.0, 2.0, 3.0])) is w and w.tolist() == [[1, 2, 3], [1, 2, 3]]
    w.copy_(wick.tensor([[1.5], [2.5]], dtype="f64"))
    assert w.dtype == "f32" and w.tolist() == [[1.5] * 3, [2.5] * 3]
    w.copy_(np.arange(6, dtype=np.float32).reshape(2, 3))
    assert w.tolist() == [[0, 1, 2], [3, 4, 5]]
    w.copy_([[9, 9, 9], [8, 8, 8]])
    assert w.tolist() == [[9, 9, 9], [8, 8, 8]]
    w.T.copy_(wick.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]))
    assert w.tolist() == [[0, 2, 4], [1, 3, 5]]
    w.copy_(src=3)
    assert w.tolist() == [[3] * 3] * 2
    with pytest.raises(wick.ShapeError):
        w.copy_(wick.zeros(4))
    with pytest.raises(TypeError):
        w.fill_("a")
    with pytest.raises(TypeError):
        w.copy_()


def test_no_leak(rss):
    a = wick.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = a.gt(2)
    for _ in range(2000):  # warm up allocator caches
        a.exp().add(1.0)
    before = rss()
    for _ in range(100_000):
        a.exp().add(a).mul_(0.5)
        wick.where(c, a, 0.0).clamp(min=1.0)
        a.sub(1).lt(2)
    grown = rss() - before
    assert grown < 4, "RSS grew %.1f MiB over 100k calls" % grown


def test_docstrings_are_signatures(source_dir):
    unary = [n for n, _ in header_ops(source_dir, "WK_UNARY_OPS")] + ["reciprocal", "square", "negative"]
    binary = [n for n, _ in header_ops(source_dir, "WK_BINARY_OPS")]
    cmp = [n for n, _ in header_ops(source_dir, "WK_CMP_OPS")]
    both = unary + binary + cmp + ["where", "affine", "elu", "clamp", "clip"]
    assert_signature_docs([wick.Tensor, wick], both)
    assert_signature_docs([wick.Tensor], [n + "_" for n in unary + binary] +
                          ["clamp_", "clip_", "fill_", "zero_", "copy_"])
