"""Errors: every wick status is an exception class (a subclass of wick.Error
and of the built-in a Python user catches), messages are wick's own (they
name the op and the shapes), and hostile input to every foundation entry
point raises a clean exception -- never a crash, never a SystemError, never
a silently wrong result. Threads see their own errors only."""
import threading

import pytest

import wick

# errors.c's table: status class -> the built-in it also derives from
CLASSES = {
    "ShapeError": ValueError,
    "DTypeError": TypeError,
    "DeviceError": ValueError,
    "IndexError": IndexError,
    "ArgError": ValueError,
    "OutOfMemoryError": MemoryError,
    "NotCompiledError": NotImplementedError,
    "IOError": OSError,
    "FormatError": ValueError,
    "DivZeroError": ZeroDivisionError,
    "InternalError": RuntimeError,
    "BusyError": RuntimeError,
    "CommError": RuntimeError,
}

HUGE = 1 << 62


class RaisingIndex:
    def __index__(self):
        raise RuntimeError("boom from __index__")


class RaisingFloat:
    def __float__(self):
        raise RuntimeError("boom from __float__")


class RaisingSeq:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        raise RuntimeError("boom from __getitem__")


def test_every_status_has_its_class():
    assert issubclass(wick.Error, Exception) and not issubclass(wick.Error, (ValueError, TypeError))
    seen = set()
    for name, builtin in CLASSES.items():
        cls = getattr(wick, name)
        assert issubclass(cls, wick.Error) and issubclass(cls, builtin), name
        assert cls.__name__ == name and cls.__module__ == "wick"
        assert cls not in seen
        seen.add(cls)
        with pytest.raises(builtin):  # catchable as the built-in alone
            raise cls("x")
    # the only wick.Error classes are these (a new status needs a row here)
    public = {n for n in dir(wick) if isinstance(getattr(wick, n), type) and issubclass(getattr(wick, n), wick.Error)}
    assert public == set(CLASSES) | {"Error"}


@pytest.mark.parametrize("make, cls, words", [
    (lambda: wick.zeros(2, 3) + wick.zeros(4), wick.ShapeError, ["add", "[2, 3]", "[4]", "broadcast"]),
    (lambda: wick.zeros(2, 3) * wick.zeros(5, 1, 4), wick.ShapeError, ["mul", "[2, 3]", "[5, 1, 4]"]),
    (lambda: wick.ones(2, 3) @ wick.ones(4, 5), wick.ShapeError, ["matmul", "[2, 3]", "[4, 5]"]),
    (lambda: wick.zeros(2).item(), wick.ShapeError, ["wk_item", "[2]"]),
    (lambda: wick.zeros(-1), wick.ShapeError, ["negative", "-1"]),
    (lambda: wick.rand(2, dtype="i32"), wick.DTypeError, ["rand", "i32"]),
    (lambda: wick.zeros(2, dtype="i32", requires_grad=True), wick.DTypeError, ["requires_grad", "i32"]),
    (lambda: wick.zeros(2, dtype="q4_0"), wick.DTypeError, ["q4_0"]),
    (lambda: wick.arange(0, 10, 0), wick.ArgError, ["arange", "step 0"]),
    (lambda: wick.tensor([1, 2]) / wick.tensor([1, 0]), wick.DivZeroError, ["div", "zero", "i64"]),
    (lambda: wick.zeros(1 << 40), wick.OutOfMemoryError, ["4398046511104 bytes", "f32"]),
])
def test_messages_are_wicks(make, cls, words):
    with pytest.raises(cls) as e:
        make()
    msg = str(e.value)
    for w in words:
        assert w in msg, f"{w!r} not in {msg!r}"


def test_an_error_does_not_leak_into_the_next_call():
    with pytest.raises(wick.ShapeError, match=r"\[7\]"):
        wick.zeros(2) + wick.zeros(7)
    assert (wick.zeros(2) + 1).tolist() == [1, 1]  # success after a failure: no stale error
    with pytest.raises(wick.ShapeError) as e:
        wick.zeros(3) + wick.zeros(5)
    assert "[3]" in str(e.value) and "[7]" not in str(e.value)


def test_cuda_without_the_backend():
    if wick.cuda_device_count() > 0:
        pytest.skip("a GPU is here")
    with pytest.raises((wick.NotCompiledError, wick.DeviceError)):
        wick.zeros(2, device="cuda")
    with pytest.raises((wick.NotCompiledError, wick.DeviceError)):
        wick.device("cuda:0")


# ---- hostile input to the foundation's entry points ----

@pytest.mark.parametrize("make", [
    lambda: wick.zeros(HUGE), lambda: wick.ones(HUGE, 4), lambda: wick.empty(HUGE), lambda: wick.rand(HUGE),
    lambda: wick.randn(HUGE), lambda: wick.full((HUGE,), 1.0), lambda: wick.eye(HUGE), lambda: wick.eye(1 << 31),
    lambda: wick.zeros(1 << 31, 1 << 31), lambda: wick.zeros(1 << 21, 1 << 21, 1 << 21), lambda: wick.arange(0, HUGE),
    lambda: wick.arange(0, 1e300), lambda: wick.zeros(1 << 40), lambda: wick.empty(1 << 42, dtype="f64"),
    lambda: wick.full((1 << 30, 1 << 30), 0.0, dtype="f64"), lambda: wick.ones(1 << 24, 1 << 24, dtype="i64"),
])
def test_huge_shapes_raise(make):
    with pytest.raises((wick.OutOfMemoryError, wick.ShapeError)):
        make()


def test_shapes_beyond_int64_and_rank_beyond_8():
    for make in (lambda: wick.zeros(1 << 63), lambda: wick.zeros((1 << 64,)), lambda: wick.full((1 << 70,), 0)):
        with pytest.raises(OverflowError):
            make()
    assert wick.zeros(*[1] * 8).ndim == 8
    for make in (lambda: wick.zeros(*[1] * 9), lambda: wick.zeros([1] * 9), lambda: wick.ones((1,) * 20),
                 lambda: wick.full([1] * 9, 1.0), lambda: wick.tensor([[[[[[[[[1]]]]]]]]])):
        with pytest.raises(ValueError, match="8"):
            make()


def test_nan_and_inf_arguments():
    nan, inf = float("nan"), float("inf")
    for a in ((0, nan), (0, inf), (nan, 3), (0, 10, nan), (0, 10, inf), (-inf, 0)):
        with pytest.raises(wick.ArgError, match="finite"):
            wick.arange(*a)
    for make in (lambda: wick.eye(nan), lambda: wick.zeros(nan)):
        with pytest.raises(TypeError):
            make()
    with pytest.raises(IndexError):  # numpy / torch: a float index is an IndexError
        wick.zeros(2)[nan]
    # as values they are values
    v = wick.full((2,), nan).tolist()
    assert v[0] != v[0]
    assert wick.tensor([inf, -inf]).tolist() == [inf, -inf]
    assert (wick.zeros(2) / 0).tolist()[0] != 0  # nan, not an exception, for floats (IEEE)


@pytest.mark.parametrize("call", [
    lambda **k: wick.zeros(2, **k), lambda **k: wick.ones(2, 2, **k), lambda **k: wick.empty(3, **k),
    lambda **k: wick.rand(2, **k), lambda **k: wick.randn(2, **k), lambda **k: wick.full((2,), 1.0, **k),
    lambda **k: wick.eye(2, **k), lambda **k: wick.arange(3, **k), lambda **k: wick.tensor([1.0], **k),
    lambda **k: wick.as_tensor([1.0], **k), lambda **k: wick.zeros_like(wick.zeros(2), **k),
    lambda **k: wick.ones_like(wick.zeros(2), **k), lambda **k: wick.full_like(wick.zeros(2), 3, **k),
])
def test_wrong_types_for_every_keyword(call):
    for bad in (3, 2.5, object(), b"f32", [wick.f32], "nonsense"):
        with pytest.raises(TypeError):
            call(dtype=bad)
    for bad in (object(), "tpu", "cpu:0", "cuda:x", 2.5, b"cpu"):
        with pytest.raises((TypeError, ValueError)):
            call(device=bad)
    with pytest.raises(TypeError, match="unexpected keyword"):
        call(colour="red")
    with pytest.raises(TypeError, match="unexpected keyword"):
        call(**{"dtype ": "f32"})


def test_wrong_types_for_positional_and_numeric_arguments():
    cases = [
        lambda: wick.zeros(2.5), lambda: wick.zeros("2"), lambda: wick.zeros([2, "3"]), lambda: wick.zeros(None),
        lambda: wick.full((2,), "x"), lambda: wick.full("2", 1.0),
        lambda: wick.eye("3"), lambda: wick.eye(2.0), lambda: wick.arange("3"), lambda: wick.arange(0, "3"),
        lambda: wick.arange(0, 3, "1"), lambda: wick.zeros_like(3), lambda: wick.zeros_like([1.0]),
        lambda: wick.ones_like(None), lambda: wick.full_like(wick.zeros(2), "x"), lambda: wick.manual_seed("x"),
        lambda: wick.set_num_threads("2"), lambda: wick.set_num_threads(2.0), lambda: wick.from_numpy(3),
        lambda: wick.from_numpy("abc"), lambda: wick.from_numpy([1.0, 2.0]), lambda: wick.as_tensor(object()),
        lambda: wick.tensor(None), lambda: wick.tensor(object()), lambda: wick.tensor({1: 2}),
        lambda: wick.zeros(2) + "a", lambda: wick.zeros(2) + None, lambda: wick.zeros(2) < "a",
        lambda: wick.zeros(2) @ object(), lambda: len(wick.zeros(())), lambda: wick.tensor([1.5]).__index__(),
    ]
    for i, make in enumerate(cases):
        with pytest.raises(TypeError):
            make()
    for make in (lambda: wick.zeros(3)["a"], lambda: wick.zeros(3)[1.5], lambda: wick.zeros(3)[[1.5]]):
        with pytest.raises(IndexError):  # numpy's and torch's class for a bad index
            make()
    for make in (lambda: wick.full((2,), None), lambda: wick.zeros(2, requires_grad="yes")):
        with pytest.raises(TypeError):
            make()
    with pytest.raises(TypeError, match="missing required argument 'fill_value'"):
        wick.full((2,))
    with pytest.raises(TypeError, match="at most 5 arguments"):
        wick.full((2,), 1, None, None, False, 6)
    with pytest.raises(TypeError, match="multiple values"):
        wick.full((2,), 1, shape=(3,))


def test_str_and_bytes_as_data():
    for bad in ("abc", ["a"], [b"a"], [1, "2"], [[1.0], ["x"]], [1, None]):
        with pytest.raises(TypeError):
            wick.tensor(bad)
    with pytest.raises(ValueError, match="ragged"):
        wick.tensor([[1.0], 2.0])
    # bytes and bytearray have the buffer protocol: unsigned bytes, like numpy.frombuffer
    t = wick.tensor(b"abc")
    assert t.dtype is wick.u8 and t.tolist() == [97, 98, 99]
    assert wick.from_numpy(bytearray(b"\x01\x02")).tolist() == [1, 2]


def test_bytes_are_not_a_shape():
    with pytest.raises(TypeError):
        wick.zeros(b"\x02\x03")


def test_python_ints_beyond_int64_overflow():
    assert wick.tensor([2**53 + 1]).tolist() == [2**53 + 1]
    with pytest.raises(OverflowError):
        wick.tensor([1 << 70])


def test_thread_counts_beyond_int_raise():
    n = wick.get_num_threads()
    try:
        with pytest.raises((wick.ArgError, OverflowError)):
            wick.set_num_threads((1 << 32) + 1)
    finally:
        wick.set_num_threads(n)


def test_thread_counts_out_of_range():
    n = wick.get_num_threads()
    for bad in (-5, 1 << 20):
        with pytest.raises(wick.ArgError, match="thread count"):
            wick.set_num_threads(bad)
    assert wick.get_num_threads() == n


def test_raising_dunder_methods_propagate():
    """An object whose __index__ / __float__ / __getitem__ raises: its own
    exception comes out (or a TypeError), never a SystemError or a crash."""
    for make in (lambda: wick.full((2,), RaisingFloat()), lambda: wick.full((RaisingIndex(),), 1.0),
                 lambda: wick.tensor([RaisingFloat()]), lambda: wick.tensor([1.0, RaisingFloat()]),
                 lambda: wick.eye(RaisingIndex()), lambda: wick.arange(RaisingFloat()),
                 lambda: wick.arange(0, 5, RaisingFloat()), lambda: wick.zeros(2)[RaisingIndex()],
                 lambda: wick.zeros(3, RaisingIndex()), lambda: wick.zeros((3, RaisingIndex())),
                 lambda: wick.set_num_threads(RaisingIndex()), lambda: wick.tensor(RaisingSeq()),
                 lambda: wick.tensor([RaisingSeq()])):
        with pytest.raises(RuntimeError, match="boom"):
            make()
    with pytest.raises(RuntimeError, match="boom"):  # one __index__ positional: a dim (numpy ints), as torch
        wick.zeros(RaisingIndex())
    with pytest.raises(TypeError):  # unknown operand types: NotImplemented, Python's TypeError
        wick.zeros(2) + RaisingFloat()


@pytest.mark.parametrize("dtype, why", [
    ("?", "bool"), (">f4", "big-endian"), (">i8", "big-endian"), ("<c8", "complex"), ("O", "object"),
    ("U3", "unicode"), ("S3", "bytes"), ("i1", "int8"), ("u2", "uint16"), ("u8", "uint64"),
    ([("a", "<f4"), ("b", "<i4")], "structured"),
])
def test_odd_buffer_formats_raise_type_error(np, dtype, why):
    a = np.zeros(4, dtype=dtype)
    for make in (wick.from_numpy, wick.tensor, wick.as_tensor, lambda x: wick.zeros(4)[...].__setitem__(0, x)):
        with pytest.raises(TypeError, match="format"):
            make(a)


def test_buffers_numpy_cannot_export_and_odd_layouts(np):
    with pytest.raises(ValueError):  # datetime64: numpy refuses to export it at all
        wick.from_numpy(np.zeros(2, "M8[s]"))
    with pytest.raises(TypeError, match="too many dims"):
        wick.from_numpy(np.zeros((1,) * 9, np.float32))
    with pytest.raises(TypeError, match="negative"):
        wick.from_numpy(np.zeros((2, 2), np.float32)[::-1])
    with pytest.raises(wick.ArgError, match="aligned"):  # numpy allows misaligned arrays; wick does not
        wick.from_numpy(np.frombuffer(b"abcdefghi", dtype=np.float32, offset=1))
    import array
    with pytest.raises(TypeError, match="format"):
        wick.from_numpy(array.array("b", [1, 2]))
    with pytest.raises(TypeError, match="format"):
        wick.from_numpy(memoryview(b"abcdefgh").cast("?"))
    assert wick.from_numpy(array.array("f", [1, 2])).tolist() == [1.0, 2.0]


# ---- threads ----

def test_threads_see_only_their_own_errors():
    """8 threads create, compute and fail at once, some with the GIL released
    (big operands): wick's error state is per thread, so each message names
    that thread's shapes."""
    failures = []
    start = threading.Barrier(8)

    def work(i):
        try:
            start.wait()
            for k in range(150):
                n = 2 + i
                c = wick.ones(n, 3) @ wick.full((3, n), float(k))
                assert c.shape == (n, n) and c.tolist()[0][0] == 3.0 * k
                try:
                    wick.zeros(i + 1, 3) + wick.zeros(i + 10)
                except wick.ShapeError as e:
                    assert f"[{i + 1}, 3] and [{i + 10}]" in str(e), str(e)
                else:
                    raise AssertionError("no ShapeError")
                try:  # released GIL: another thread runs while this one fails
                    wick.ones(130, 130 + i) + wick.ones(7 + i)
                except wick.ShapeError as e:
                    assert f"[130, {130 + i}] and [{7 + i}]" in str(e), str(e)
                else:
                    raise AssertionError("no ShapeError (big)")
                try:
                    wick.arange(0, 10 + i, 0)
                except wick.ArgError as e:
                    assert f"end {10 + i}," in str(e), str(e)
                try:
                    wick.zeros(2, dtype=f"nope{i}")
                except TypeError as e:
                    assert f"nope{i}" in str(e)
                big = wick.ones(200, 100) * float(i)
                assert (big + big).tolist()[199][99] == 2.0 * i
        except BaseException as e:  # noqa: B902 -- reported below
            failures.append((i, repr(e)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_raising_does_not_leak(rss):
    def loop(n):
        for _ in range(n):
            try:
                wick.zeros(2, 3) + wick.zeros(4)
            except wick.ShapeError:
                pass
            try:
                wick.zeros(2, dtype="nope")
            except TypeError:
                pass
            try:
                wick.full((2,), RaisingFloat())
            except RuntimeError:
                pass

    loop(2000)  # warm up: allocator pools, interned strings
    before = rss()
    loop(100_000)
    grown = rss() - before
    assert grown < 4, f"RSS grew {grown:.1f} MiB over 100k failing calls"


def test_integer_values_are_exact_through_item_and_tolist():
    big = 2**62 + 1  # not representable as a double
    t = wick.tensor([big, -big])
    assert t.tolist() == [big, -big] and t[0].item() == big and int(t[1]) == -big
    assert wick.tensor([[1, 2], [3, 4]], dtype="i32").tolist() == [[1, 2], [3, 4]]
    assert wick.tensor([255], dtype="u8").item() == 255
