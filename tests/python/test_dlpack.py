"""DLPack both ways: Tensor.__dlpack__ / __dlpack_device__ and wick.from_dlpack.

The oracles are torch and numpy: each side's values are compared with the
other's, and zero-copy is proved by writing through one side and reading the
other. Hand-made capsules (ctypes) reach the producer-side cases no library
produces here: CUDA memory, vector lanes, negative strides, byte offsets."""
import ctypes
import gc
import sys

import pytest

import wick

# wick dtype name -> torch dtype name (every dtype both have)
TORCH_DTYPES = {
    "f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
    "u8": "uint8", "i16": "int16", "i32": "int32", "i64": "int64",
}
NUMPY_DTYPES = {
    "f32": "float32", "f64": "float64", "f16": "float16", "u8": "uint8",
    "u32": "uint32", "i16": "int16", "i32": "int32", "i64": "int64",
}
VALUES = [[1, 2, 3], [4, 5, 6]]


def tdt(torch, name):
    return getattr(torch, TORCH_DTYPES[name])


# ---- wick -> torch -------------------------------------------------------

@pytest.mark.parametrize("dt", sorted(TORCH_DTYPES))
def test_torch_reads_and_writes_wick_memory(torch, dt):
    w = wick.tensor(VALUES, dtype=dt)
    x = torch.from_dlpack(w)
    assert x.dtype == tdt(torch, dt) and tuple(x.shape) == (2, 3) and x.device.type == "cpu"
    assert x.tolist() == VALUES
    x[0, 1] = 9  # torch writes, wick reads
    assert w.tolist() == [[1, 9, 3], [4, 5, 6]]
    w[1, 2] = 7  # wick writes, torch reads
    assert x[1, 2].item() == 7


def test_torch_sees_wick_views_with_their_strides(torch):
    base = wick.tensor([[float(6 * i + j) for j in range(6)] for i in range(4)])
    ref = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    cases = [
        (base.mT, ref.t()),             # transposed: strides (1, 6)
        (base[1:, 2:5], ref[1:, 2:5]),  # an offset into the storage
        (base[2], ref[2]),              # rank 1 from a select
        (base[:, 3][None], ref[:, 3][None]),
    ]
    for w, r in cases:
        x = torch.from_dlpack(w)
        assert tuple(x.shape) == tuple(w.shape) and tuple(x.stride()) == tuple(w.strides)
        assert torch.equal(x, r)
    # the offset view points into the same memory: a write lands in base
    x = torch.from_dlpack(base[1:, 2:5])
    x[0, 0] = -1
    assert base[1, 2].item() == -1


def test_torch_rank0_and_empty(torch):
    x = torch.from_dlpack(wick.tensor(2.5, dtype="f64"))
    assert x.shape == () and x.item() == 2.5 and x.dtype == torch.float64
    e = torch.from_dlpack(wick.zeros(0, 3))
    assert tuple(e.shape) == (0, 3) and e.numel() == 0


# ---- torch -> wick -------------------------------------------------------

@pytest.mark.parametrize("dt", sorted(TORCH_DTYPES))
def test_wick_reads_and_writes_torch_memory(torch, dt):
    x = torch.tensor(VALUES, dtype=tdt(torch, dt))
    w = wick.from_dlpack(x)
    assert w.dtype == wick.dtype(dt) and w.shape == (2, 3) and w.device == wick.cpu
    assert w.tolist() == VALUES
    w[0, 0] = 8
    assert x[0, 0].item() == 8
    x[1, 1] = 3
    assert w[1, 1].item() == 3


def test_wick_takes_torch_strides(torch):
    ref = torch.arange(60, dtype=torch.float32).reshape(5, 12)
    cases = [ref.t(), ref[::2, 1::3], ref[1:4, 5:], ref[:, 4], ref[3, 2:3].expand(4, 3),
             ref.reshape(5, 3, 4).permute(2, 0, 1)]
    for x in cases:
        w = wick.from_dlpack(x)
        assert w.shape == tuple(x.shape) and w.strides == tuple(x.stride())
        assert w.tolist() == x.tolist()
    x = ref[::2, 1::3]
    w = wick.from_dlpack(x)
    w[1, 2] = -5  # through the strided view into torch's memory
    assert ref[2, 7].item() == -5
    # wick computes on the strided view like torch does
    assert (w * 2).tolist() == (x * 2).tolist()


def test_wick_from_torch_rank0_and_empty(torch):
    w = wick.from_dlpack(torch.tensor(7, dtype=torch.int32))
    assert w.shape == () and w.item() == 7 and w.dtype is wick.i32
    for shape in [(0,), (3, 0), (0, 2, 5)]:
        e = wick.from_dlpack(torch.zeros(shape))
        assert e.shape == shape and e.tolist() == torch.zeros(shape).tolist()


def test_torch_types_wick_lacks_raise(torch):
    for dt in [torch.complex64, torch.int8]:
        with pytest.raises(wick.DTypeError, match="no wick dtype"):
            wick.from_dlpack(torch.zeros(3, dtype=dt))


# ---- numpy both ways -----------------------------------------------------

@pytest.mark.parametrize("dt", sorted(NUMPY_DTYPES))
def test_numpy_both_ways(np, dt):
    w = wick.tensor(VALUES, dtype=dt)
    a = np.from_dlpack(w)
    assert a.dtype == np.dtype(NUMPY_DTYPES[dt]) and a.tolist() == VALUES
    assert not a.flags.writeable  # numpy 1.x marks DLPack imports read-only
    w[0, 2] = 4  # wick writes, numpy reads: the same memory
    assert a[0, 2] == 4
    b = np.array(VALUES, dtype=NUMPY_DTYPES[dt])
    v = wick.from_dlpack(b)
    assert v.dtype == wick.dtype(dt) and v.tolist() == VALUES
    v[1, 0] = 2
    assert b[1, 0] == 2


def test_numpy_strided_both_ways(np):
    a = np.arange(48, dtype=np.float64).reshape(6, 8)
    for view in [a.T, a[::3, 1::2], a[2:, 5], a[1:2, :0]]:
        w = wick.from_dlpack(view)
        assert w.shape == view.shape and w.tolist() == view.tolist()
        assert w.strides == tuple(s // 8 for s in view.strides) or view.size <= 1
    w = wick.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).mT
    b = np.from_dlpack(w)
    assert b.strides == (4, 12) and b.tolist() == [[1, 4], [2, 5], [3, 6]]
    assert np.from_dlpack(wick.tensor(3, dtype="i64")).shape == ()


# ---- wick -> wick ---------------------------------------------------------

def test_wick_round_trip_shares_memory():
    w = wick.tensor([1.0, 2.0, 3.0])
    v = wick.from_dlpack(w)
    v[0] = 5
    assert w.tolist() == [5, 2, 3]
    u = wick.from_dlpack(w[1:].__dlpack__())  # a raw capsule of an offset view
    u[1] = 0
    assert u.tolist() == [2, 0] and w.tolist() == [5, 2, 0]


def test_dlpack_device_and_stream():
    w = wick.zeros(2)
    assert w.__dlpack_device__() == (1, 0)
    assert type(w.__dlpack__(stream=None)).__name__ == "PyCapsule"
    assert wick.from_dlpack(w.__dlpack__(-1)).tolist() == [0, 0]  # the stream is ignored on the CPU
    with pytest.raises(TypeError, match="stream"):
        w.__dlpack__(stream="default")
    with pytest.raises(TypeError):
        w.__dlpack__(colour=1)


# ---- what cannot be exported ---------------------------------------------

def test_export_refusals(np):
    with pytest.raises(wick.DTypeError, match="q4_0"):
        wick.empty(2, 32, dtype="q4_0").__dlpack__()
    with pytest.raises(wick.DTypeError, match="f8e4m3"):
        wick.zeros(2, dtype="f8e4m3").__dlpack__()
    ro = np.arange(4, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(BufferError, match="read-only"):
        wick.from_numpy(ro).__dlpack__()
    assert np.from_dlpack(wick.tensor(wick.from_numpy(ro))).tolist() == [0, 1, 2, 3]  # the advised copy
    g = wick.ones(3)
    g.requires_grad = True
    with pytest.raises(RuntimeError, match="requires grad"):
        g.__dlpack__()


def test_from_dlpack_bad_objects():
    with pytest.raises(TypeError, match="__dlpack__"):
        wick.from_dlpack([1, 2, 3])
    cap = wick.ones(2).__dlpack__()
    wick.from_dlpack(cap)
    with pytest.raises(ValueError, match="already consumed"):
        wick.from_dlpack(cap)

    class Liar:
        def __dlpack__(self, stream=None):
            return 42

    with pytest.raises(TypeError, match="not a capsule"):
        wick.from_dlpack(Liar())


def test_from_dlpack_asks_the_producer_for_the_right_stream():
    calls = []

    class Producer:
        def __init__(self, device, inner):
            self.device, self.inner = device, inner

        def __dlpack_device__(self):
            return self.device

        def __dlpack__(self, stream=None):
            calls.append(stream)
            return self.inner.__dlpack__()

    w = wick.from_dlpack(Producer((1, 0), wick.tensor([1.0, 2.0])))
    assert w.tolist() == [1, 2] and calls == [None]  # host memory: stream=None
    # CUDA memory: wick's device is opened first (here it cannot be), and no
    # capsule is asked for
    with pytest.raises((wick.NotCompiledError, wick.DeviceError)):
        wick.from_dlpack(Producer((2, 97), wick.tensor([1.0])))
    assert calls == [None]
    with pytest.raises(TypeError, match="device_type, device_id"):
        wick.from_dlpack(Producer("cpu", wick.tensor([1.0])))


# ---- hand-made capsules (ctypes): the producer cases no library gives here

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]
NAME = b"dltensor"


class Handmade:
    """A DLManagedTensor over a ctypes buffer; `deleted` counts deleter calls."""

    def __init__(self, values=(0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0), shape=(8,), strides=None, code=2, bits=32,
                 lanes=1, device_type=1, device_id=0, byte_offset=0, ndim=None, ctype=ctypes.c_float):
        self.buf = (ctype * len(values))(*values)
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = (ctypes.c_int64 * max(len(shape), 1))(*strides) if strides is not None else None
        self.deleted = 0

        def on_delete(_):
            self.deleted += 1

        self.deleter = DELETER(on_delete)
        t = DLTensor(ctypes.cast(self.buf, ctypes.c_void_p), DLDevice(device_type, device_id),
                     len(shape) if ndim is None else ndim, DLDataType(code, bits, lanes), self.shape,
                     self.strides, byte_offset)
        self.managed = DLManagedTensor(t, None, self.deleter)
        self.capsule = _capsule_new(ctypes.addressof(self.managed), NAME, None)


def test_handmade_capsule_byte_offset_strides_and_one_delete():
    h = Handmade(shape=(2, 2), strides=(1, 3), byte_offset=4)  # starts at element 1
    w = wick.from_dlpack(h.capsule)
    assert _capsule_name(h.capsule) == b"used_dltensor"
    assert w.tolist() == [[1, 4], [2, 5]]
    w[0, 0] = 10  # zero-copy into the producer's buffer
    assert h.buf[1] == 10
    v = w.mT  # a view keeps the memory alive
    del w
    gc.collect()
    assert h.deleted == 0 and v.tolist() == [[10, 2], [4, 5]]
    del v
    gc.collect()
    assert h.deleted == 1  # exactly once, when the last view went
    # contiguous (NULL strides), rank 0 and empty
    h2 = Handmade(shape=(2, 4))
    assert wick.from_dlpack(h2.capsule).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    gc.collect()
    assert h2.deleted == 1
    assert wick.from_dlpack(Handmade(shape=(), values=(3.0,)).capsule).item() == 3
    assert wick.from_dlpack(Handmade(shape=(4, 0)).capsule).shape == (4, 0)
    # kDLCUDAHost (pinned host memory) is host memory
    assert wick.from_dlpack(Handmade(shape=(2,), device_type=3).capsule).tolist() == [0, 1]


@pytest.mark.parametrize("kw,cls,match", [
    (dict(lanes=4), wick.DTypeError, "lanes"),
    (dict(code=5, bits=64), wick.DTypeError, "complex"),
    (dict(bits=24), wick.DTypeError, "float24"),
    (dict(code=6, bits=8), wick.DTypeError, "bool"),
    (dict(code=9, bits=8), wick.DTypeError, "code 9"),
    (dict(shape=(2, 2), strides=(-2, 1), byte_offset=8), wick.ArgError, "negative stride"),
    (dict(byte_offset=2), wick.ArgError, "byte_offset"),
    (dict(shape=(2,) * 9), wick.ShapeError, "rank 9"),
    (dict(shape=(2, 2), ndim=-1), wick.ShapeError, "rank -1"),
    (dict(shape=(-3,)), wick.ShapeError, "negative size"),
    (dict(device_type=4), wick.DeviceError, "device type 4"),
    (dict(device_type=2, device_id=97), (wick.NotCompiledError, wick.DeviceError), ""),
])
def test_handmade_capsule_rejections(kw, cls, match):
    h = Handmade(**kw)
    with pytest.raises(cls, match=match):
        wick.from_dlpack(h.capsule)
    assert _capsule_name(h.capsule) == NAME  # still the producer's
    gc.collect()
    assert h.deleted == 0


def test_cuda_capsule_without_a_gpu():
    if wick.cuda_device_count() > 0:
        pytest.skip("a GPU is here: a host buffer must not be passed off as device memory")
    h = Handmade(device_type=2, device_id=0)
    with pytest.raises((wick.NotCompiledError, wick.DeviceError)):
        wick.from_dlpack(h.capsule)
    assert _capsule_name(h.capsule) == NAME and h.deleted == 0


# ---- lifetimes -----------------------------------------------------------

def test_producer_dies_first(torch, np):
    x = torch.arange(1000, dtype=torch.float64)
    w = wick.from_dlpack(x)
    del x
    gc.collect()
    assert w[999].item() == 999 and sum(w.tolist()) == 999 * 1000 / 2
    v = wick.arange(500, dtype="i64")
    y = torch.from_dlpack(v)
    del v
    gc.collect()
    assert y[499].item() == 499 and y.sum().item() == 499 * 500 // 2
    a = np.arange(300, dtype=np.int32)
    u = wick.from_dlpack(a)
    del a
    gc.collect()
    assert u[299].item() == 299
    b = np.from_dlpack(wick.tensor([4.0, 5.0]))
    gc.collect()
    assert b.tolist() == [4, 5]


def test_consumer_dies_first(torch, np):
    a = np.arange(10, dtype=np.float32)
    r0 = sys.getrefcount(a)
    w = wick.from_dlpack(a)
    assert sys.getrefcount(a) > r0  # numpy's deleter holds the array
    del w
    gc.collect()
    assert sys.getrefcount(a) == r0 and a[3] == 3
    v = wick.tensor([1.0, 2.0])
    y = torch.from_dlpack(v)
    del y
    gc.collect()
    assert v.tolist() == [1, 2]


def test_unconsumed_capsule_releases_its_reference(np):
    a = np.arange(6, dtype=np.float32)
    r0 = sys.getrefcount(a)
    w = wick.from_numpy(a)  # holds a buffer export of a
    cap = w.__dlpack__()
    del w
    gc.collect()
    assert sys.getrefcount(a) == r0 + 1  # the capsule keeps wick's tensor, which keeps a
    del cap
    gc.collect()
    assert sys.getrefcount(a) == r0


def test_no_leak_unconsumed_capsules(rss):
    w = wick.ones(256)
    for _ in range(2000):
        w.__dlpack__()
    before = rss()
    for _ in range(100_000):
        w.__dlpack__()
    assert rss() - before < 4


def test_no_leak_round_trips(torch, rss):
    x = torch.ones(64)
    for _ in range(2000):
        torch.from_dlpack(wick.from_dlpack(x))
    before = rss()
    for _ in range(100_000):
        y = torch.from_dlpack(wick.from_dlpack(x))
    assert rss() - before < 4
    y[0] = 3
    assert x[0].item() == 3
