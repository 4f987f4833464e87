"""Lifetimes of shared memory: numpy arrays outliving the tensors they came
from and the other way round, views of views, memoryviews, read-only and
non-contiguous input, reference counting over 100k round trips, the garbage
collector, weakrefs and pickling. Every "outlives" test writes through the
survivor after the other side is deleted and collected, then reads the
value back through another path (a freed buffer would show garbage or
crash)."""
import array
import ctypes
import gc
import pickle
import sys
import weakref

import pytest

import wick


def collect():
    gc.collect()


# ---- numpy -> wick: the tensor keeps the array alive ----

def test_tensor_outlives_the_array(np):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    alive = weakref.ref(a)
    t = wick.from_numpy(a)
    del a
    collect()
    assert alive() is not None, "the tensor must keep its exporter alive"
    t[0, 1] = 40.0
    t += 1
    assert t.tolist() == [[1, 41, 3], [4, 5, 6]]
    del t
    collect()
    assert alive() is None, "the array must be released with the last tensor over it"


def test_views_of_views_keep_the_array_alive(np):
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    alive = weakref.ref(a)
    t = wick.from_numpy(a)
    v1 = t[1:]           # narrow
    v2 = v1[:, 2:5]      # narrow of a narrow
    v3 = v2[1]           # select
    v4 = v3[None, ...]   # unsqueeze
    del a, t, v1, v2, v3
    collect()
    assert alive() is not None
    v4[0, 0] = -1.0
    assert v4.tolist() == [[-1.0, 15.0, 16.0]]
    back = np.asarray(v4)  # numpy over the last view, over the first array
    assert back.tolist() == [[-1.0, 15.0, 16.0]]
    del v4
    collect()
    assert alive() is not None, "the numpy view of the tensor still holds it"
    back[0, 2] = 99.0
    assert back.tolist() == [[-1.0, 15.0, 99.0]]
    del back
    collect()
    assert alive() is None


def test_as_tensor_and_tensor_share_or_copy(np):
    a = np.ones(4, np.float32)
    shared, copied = wick.as_tensor(a), wick.tensor(a)
    a[0] = 7
    assert shared.tolist()[0] == 7 and copied.tolist()[0] == 1
    del a
    collect()
    shared[1] = 8.0
    assert shared.tolist() == [7, 8, 1, 1]


def test_other_exporters_outlive_python_references():
    """Not only numpy: array.array, bytearray and ctypes arrays (whose buffers
    have no strides) are kept alive the same way."""
    buf = array.array("f", [1, 2, 3])
    t = wick.from_numpy(buf)
    alive = weakref.ref(buf)
    del buf
    collect()
    assert alive() is not None
    t[2] = 30.0
    assert t.tolist() == [1, 2, 30]
    with pytest.raises(BufferError):  # the exporter is locked while wick holds it
        alive().append(4.0)
    del t
    collect()
    assert alive() is None
    ba = bytearray(b"\x01\x02\x03")
    t = wick.from_numpy(ba)
    del ba
    collect()
    assert t.tolist() == [1, 2, 3]
    c = (ctypes.c_int32 * 2 * 3)()
    c[1][0] = 5
    t = wick.from_numpy(c)
    assert t.shape == (3, 2) and t.strides == (2, 1) and t.tolist() == [[0, 0], [5, 0], [0, 0]]
    del c
    collect()
    t[2, 1] = 9
    assert t.tolist()[2][1] == 9


# ---- wick -> numpy: the array keeps the tensor alive ----

def test_array_outlives_the_tensor(np):
    t = wick.arange(6, dtype="f32")
    a = np.asarray(t)
    # numpy takes the buffer protocol before __array_interface__: the
    # array's base is a memoryview, whose .obj is the tensor
    assert isinstance(a.base, memoryview) and a.base.obj is t
    alive = weakref.ref(t)
    del t
    collect()
    assert alive() is not None
    a[2] = 20
    assert alive().tolist() == [0, 1, 20, 3, 4, 5]
    del a
    collect()
    assert alive() is None


def test_numpy_method_and_array_interface_outlive_the_tensor(np):
    t = wick.ones(2, 3, dtype="i32")
    a = t.numpy()
    alive = weakref.ref(t)
    del t
    collect()
    a[1, 2] = 12
    assert alive().tolist() == [[1, 1, 1], [1, 1, 12]]
    del a
    collect()
    assert alive() is None

    # __array_interface__ alone (an object that forwards only it): numpy
    # keeps that object as the array's base, and it must keep the tensor
    class Forward:
        def __init__(self, t):
            self.t = t
            self.__array_interface__ = t.__array_interface__

    t = wick.zeros(3, dtype="f64")
    f = Forward(t)
    a = np.asarray(f)
    assert a.base is f
    tref = weakref.ref(t)
    del t, f
    collect()
    assert tref() is not None
    a[0] = 5
    assert tref().tolist() == [5, 0, 0]
    del a
    collect()
    assert tref() is None


def test_memoryview_outlives_the_tensor():
    t = wick.zeros(2, 2, dtype="f32")
    m = memoryview(t)
    assert m.obj is t and m.format == "f" and m.shape == (2, 2) and m.strides == (8, 4)
    alive = weakref.ref(t)
    del t
    collect()
    assert alive() is not None
    m[1, 0] = 3.5
    assert alive().tolist() == [[0, 0], [3.5, 0]]
    m.release()
    collect()
    assert alive() is None


def test_memoryview_of_a_view_outlives_both(np):
    base = wick.arange(12, dtype="f32")
    v = base[2:10][1:7]  # a view of a view: offset 3
    m = memoryview(v)
    del base, v
    collect()
    assert m.tolist() == [3, 4, 5, 6, 7, 8]
    m[0] = -3
    assert np.frombuffer(m, np.float32)[0] == -3
    m.release()


def test_transposed_tensor_to_numpy_keeps_strides(np):
    t = wick.tensor([[0, 1, 2], [3, 4, 5]], dtype="f32")
    a = np.asarray(t.mT)
    assert a.shape == (3, 2) and a.strides == (4, 12) and a.tolist() == [[0, 3], [1, 4], [2, 5]]
    del t
    collect()
    a[0, 1] = 30
    assert a.base.obj.tolist()[0][1] == 30  # the transposed view


# ---- read-only and non-contiguous input ----

def test_read_only_arrays_give_read_only_tensors(np):
    a = np.arange(4, dtype=np.float32)
    a.flags.writeable = False
    t = wick.from_numpy(a)
    assert t.tolist() == [0, 1, 2, 3]
    with pytest.raises(wick.ArgError, match="read-only"):
        t[0] = 5.0
    with pytest.raises(wick.ArgError, match="read-only"):
        t += 1
    with pytest.raises(wick.ArgError, match="read-only"):
        t[1:3] = wick.ones(2)
    assert a.tolist() == [0, 1, 2, 3]
    # and the way back stays read-only: numpy's view, a memoryview
    assert not np.asarray(t).flags.writeable
    assert memoryview(t).readonly
    assert t.__array_interface__["data"][1] is True
    # reading works: ops make new (writable) tensors
    assert (t * 2).tolist() == [0, 2, 4, 6]
    b = bytes(b"\x01\x02")
    with pytest.raises(wick.ArgError):
        wick.from_numpy(b).__setitem__(0, 3)


def test_non_contiguous_numpy_input_is_zero_copy(np):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = wick.from_numpy(a.T)
    assert t.shape == (4, 3) and t.strides == (1, 4)
    assert t.tolist() == a.T.tolist()
    s = wick.from_numpy(a[::2, 1::2])
    assert s.shape == (2, 2) and s.strides == (8, 2)
    assert s.tolist() == a[::2, 1::2].tolist()
    a[2, 3] = 100  # writes through numpy show in both views
    assert t.tolist()[3][2] == 100 and s.tolist()[1][1] == 100
    s[0, 0] = -1.0  # and writes through wick show in numpy
    assert a[0, 1] == -1
    bc = np.broadcast_to(np.arange(3, dtype=np.float32), (4, 3))  # zero strides, read-only
    b = wick.from_numpy(bc)
    assert b.strides == (0, 1) and b.tolist() == bc.tolist()
    assert (b + 1).tolist() == (bc + 1).tolist()


@pytest.mark.parametrize("index", ["[::-1]", "[:, ::-1]", "[::-2, 1:]"])
def test_negative_strides_raise_type_error(np, index):
    a = eval("np.arange(12, dtype=np.float32).reshape(3, 4)" + index)
    with pytest.raises(TypeError, match="negative"):
        wick.from_numpy(a)
    assert wick.tensor(np.ascontiguousarray(a)).tolist() == a.tolist()


# ---- reference counting: 100k round trips stay flat ----

def test_round_trips_do_not_leak(np, rss):
    a = np.ones((2, 3), np.float32)
    t = wick.ones(2, 3)

    def loop(n):
        for _ in range(n):
            x = np.asarray(wick.from_numpy(a))  # numpy -> wick -> numpy
            y = wick.from_numpy(np.asarray(t))  # wick -> numpy -> wick
            z = memoryview(y[0])
            z.release()
            del x, y

    loop(3000)
    collect()
    before = rss()
    rc_a, rc_t = sys.getrefcount(a), sys.getrefcount(t)
    loop(100_000)
    collect()
    grown = rss() - before
    assert sys.getrefcount(a) == rc_a and sys.getrefcount(t) == rc_t
    assert grown < 5, f"RSS grew {grown:.1f} MiB over 100k round trips"


def test_views_and_temporaries_do_not_leak(rss):
    t = wick.zeros(4, 4)

    def loop(n):
        for _ in range(n):
            v = t[1:3][0]
            w = weakref.ref(v)
            (v + 1).tolist()
            del v
            assert w() is None

    loop(3000)
    before = rss()
    loop(100_000)
    assert rss() - before < 5


# ---- the garbage collector, weakrefs, pickling ----

def test_tensors_are_gc_tracked_and_collected_in_cycles():
    t = wick.zeros(3)
    assert gc.is_tracked(t)

    class Node:
        pass

    n = Node()
    n.tensor, n.me = t, n  # a cycle through a Python object holding a tensor
    lst = [t, wick.ones(2)]
    lst.append(lst)
    alive = weakref.ref(t), weakref.ref(lst[1])
    del t, n, lst
    collect()
    assert alive[0]() is None and alive[1]() is None


@pytest.mark.xfail(strict=True, reason="a cycle through from_numpy's exporter is not collected: the exporter is "
                   "held by wick's storage (shared by every view, Python-visible or not), so Tensor's tp_traverse "
                   "cannot report that edge without over-counting it; such a cycle leaks")
def test_cycle_through_the_exporter_is_collected():
    class Holder(ctypes.c_float * 4):  # a buffer exporter with a __dict__
        pass

    h = Holder()
    h.tensor = wick.from_numpy(h)  # h -> tensor -> (storage) -> h
    alive = weakref.ref(h)
    del h
    collect()
    assert alive() is None


def test_weakrefs():
    t = wick.ones(2)
    called = []
    r = weakref.ref(t, lambda _: called.append(True))
    assert r() is t
    cache = weakref.WeakValueDictionary({"t": t})
    assert cache["t"] is t
    del t
    collect()
    assert r() is None and called == [True] and "t" not in cache
    p = weakref.proxy(wick.zeros(1))  # dies at once: no reference kept
    with pytest.raises(ReferenceError):
        p.shape


def test_pickling_is_a_clear_type_error():
    import copy
    t = wick.zeros(2)
    for f in (pickle.dumps, copy.copy, copy.deepcopy):
        with pytest.raises(TypeError, match="pickle"):
            f(t)


def test_tensor_cannot_be_created_or_subclassed_directly():
    with pytest.raises(TypeError):
        wick.Tensor()
    with pytest.raises(TypeError):
        type("Sub", (wick.Tensor,), {})
