"""Conversions and layout queries from Python (python/src/ops_convert.c)
against numpy / torch: to() in every spelling, the dtype methods, cpu /
cuda, contiguous / clone, size / dim / numel / element_size / nbytes /
data_ptr, errors, and a leak check."""
import ast
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

VALUES = [[-2.75, -1.5, -0.5, 0.0], [0.25, 1.5, 2.5, 100.75]]


def test_to_dtype_spellings(np, torch):
    t = wick.tensor(VALUES)
    for spelling in ("f16", "float16", wick.f16, wick.float16, np.float16, torch.float16, "torch.float16"):
        h = t.to(spelling)
        assert h.dtype is wick.f16, spelling
        assert h.tolist() == torch.tensor(VALUES).half().tolist()
    assert t.to(dtype="bf16").dtype is wick.bf16
    assert t.to("cpu", "f64").dtype is wick.f64
    assert t.to(device="cpu", dtype=wick.i32).tolist() == torch.tensor(VALUES).int().tolist()
    assert t.to(wick.cpu).device == wick.cpu and t.to(torch.device("cpu")).device == "cpu"
    # to(other): other's dtype and device
    assert t.to(wick.zeros(1, dtype="f64")).dtype is wick.f64
    # nothing to change: the tensor itself (torch), unless copy
    assert t.to("f32") is t and t.to("cpu") is t and t.to() is t and t.to(t) is t
    c = t.to("f32", copy=True)
    assert c is not t and c.tolist() == t.tolist() and c.data_ptr() != t.data_ptr()
    # quantized dtypes through to()
    q = wick.ones(2, 32).to("q4_0")
    assert q.dtype is wick.q4_0 and q.nbytes == 2 * 18 and q.element_size() == 0
    assert q.to("f32").tolist() == [[1.0] * 32] * 2


def test_dtype_methods(np, torch):
    t, r = wick.tensor(VALUES), torch.tensor(VALUES)
    for name, dt in (("float", "f32"), ("double", "f64"), ("half", "f16"), ("bfloat16", "bf16"), ("long", "i64"),
                     ("int", "i32"), ("short", "i16"), ("byte", "u8")):
        got = getattr(t, name)()
        assert got.dtype == dt, name
        src = r.abs() if name == "byte" else r  # torch's byte() of negatives is undefined behaviour
        ref = getattr(src, name)()
        val = getattr(t.abs() if name == "byte" else t, name)()
        assert val.to("f64").tolist() == ref.double().tolist(), name
    assert t.float() is t and t.double().double() is not t
    b = t.bool()
    assert b.dtype == "u8" and b.tolist() == r.bool().int().tolist()
    assert wick.tensor([0, 3, -1]).bool().tolist() == [0, 1, 1]
    # the methods do not shadow the number protocol
    one = wick.tensor([2.5])
    assert float(one) == 2.5 and int(one) == 2 and bool(one) is True
    assert one.float().dtype == "f32" and one.int().tolist() == [2]
    assert t.type_as(wick.zeros(1, dtype="i64")).dtype == "i64"
    with pytest.raises(TypeError):
        t.type_as("f32")


def test_devices():
    t = wick.tensor(VALUES)
    assert t.cpu() is t
    if wick.cuda_device_count() == 0:
        for f in (lambda: t.cuda(), lambda: t.cuda(0), lambda: t.to("cuda"), lambda: t.to("cuda:0"),
                  lambda: t.to(device="cuda")):
            # NotCompiledError in a CPU-only build, DeviceError with the CUDA
            # backend built but no usable GPU (this machine)
            with pytest.raises((wick.NotCompiledError, wick.DeviceError)):
                f()
    else:
        g = t.cuda()
        assert g.is_cuda and g.cpu().tolist() == t.tolist() and t.to("cuda", "f16").dtype == "f16"
        assert g.to("cuda") is g


def test_to_errors():
    t = wick.tensor(VALUES)
    with pytest.raises(TypeError):
        t.to("f33")
    with pytest.raises(TypeError):
        t.to(3)
    with pytest.raises(ValueError):
        t.to(device="tpu")
    with pytest.raises(TypeError):
        t.to("cpu", "f32", "f64")
    with pytest.raises(TypeError):
        t.to(dtype="f32", colour=1)
    with pytest.raises(wick.ShapeError):  # 32-element blocks: a row of 4 cannot be quantized
        t.to("q4_0")


def test_contiguous_clone(np):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = wick.from_numpy(a)
    assert t.is_contiguous() and t.contiguous() is t
    v = t.T
    assert not v.is_contiguous()
    c = v.contiguous()
    assert c.is_contiguous() and c.tolist() == a.T.tolist() and c.strides == (3, 1)
    assert t[:, 1:3].contiguous().tolist() == a[:, 1:3].tolist()
    k = t.clone()
    assert k.tolist() == a.tolist() and k.data_ptr() != t.data_ptr()
    k.fill_(0)
    assert a[0, 1] == 1  # the clone has its own memory
    assert wick.clone(v).tolist() == a.T.tolist() and wick.clone(v).is_contiguous()
    with pytest.raises(TypeError):
        wick.clone(a)


def test_sizes_and_pointers(np, torch):
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t, r = wick.from_numpy(a), torch.from_numpy(a)
    assert t.size() == tuple(r.size()) and t.size(1) == 3 and t.size(-1) == 4 and t.size(dim=0) == 2
    assert t.dim() == 3 and t.ndimension() == 3 and t.numel() == 24 and t.nelement() == 24 and wick.numel(t) == 24
    assert wick.tensor(1.0).dim() == 0 and wick.tensor(1.0).size() == () and wick.zeros(0, 5).numel() == 0
    with pytest.raises(wick.IndexError):
        t.size(3)
    with pytest.raises(wick.IndexError):
        t.size(-4)
    with pytest.raises(TypeError):
        t.size("a")
    for dt, tdt in (("f32", torch.float32), ("f64", torch.float64), ("f16", torch.float16),
                    ("bf16", torch.bfloat16), ("i64", torch.int64), ("i32", torch.int32), ("i16", torch.int16),
                    ("u8", torch.uint8)):
        w = t.to(dt)
        assert w.element_size() == torch.zeros(1, dtype=tdt).element_size(), dt
        assert w.itemsize == w.element_size() and w.nbytes == 24 * w.element_size()
    # data_ptr: numpy's address, offset for a view
    assert t.data_ptr() == a.__array_interface__["data"][0]
    v = t[1, 2:]
    assert v.data_ptr() == a[1, 2:].__array_interface__["data"][0] == t.data_ptr() + (12 + 8) * 4
    assert t.is_floating_point() and not t.long().is_floating_point()


def test_no_leak(rss):
    t = wick.tensor(VALUES)
    for _ in range(2000):
        t.to("f16")
    before = rss()
    for _ in range(100_000):
        t.to("f16")
        t.double()
        t.T.contiguous()
        t.to("f32", copy=True)
        t.size()
    grown = rss() - before
    assert grown < 4, "RSS grew %.1f MiB over 100k calls" % grown


def test_docstrings_are_signatures():
    assert_signature_docs([wick.Tensor], [
        "to", "float", "double", "half", "bfloat16", "long", "int", "short", "byte", "bool", "type_as", "cpu",
        "cuda", "contiguous", "clone", "is_contiguous", "is_floating_point", "numel", "nelement", "dim",
        "ndimension", "element_size", "size", "data_ptr"])
    assert_signature_docs([wick], ["numel", "clone"])
