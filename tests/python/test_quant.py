"""Block quantization from Python: quantize / dequantize against gguf-py's
numpy reference quantizers (byte-for-byte the same blocks, so the same
dequantized values) and against error bounds computed in numpy; qmatmul
against numpy's matmul of the dequantized weight; quantized tensors'
properties and errors."""
import pytest

import wick


@pytest.fixture(scope="module")
def quants():
    pytest.importorskip("gguf")
    from gguf import quants
    return quants


@pytest.fixture(scope="module")
def qtype():
    gguf = pytest.importorskip("gguf")
    return gguf.GGMLQuantizationType


REF_TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0"]  # gguf-py 0.19 quantizes these


def _data(np, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    x[..., :3] *= 10  # blocks with an outlier
    return x


@pytest.mark.parametrize("name", REF_TYPES)
def test_quantize_matches_gguf_py(np, quants, qtype, name):
    x = _data(np, (6, 128))
    t = getattr(qtype, name.upper())
    ref = quants.dequantize(quants.quantize(x, t), t)
    q = wick.from_numpy(x).quantize(name)
    assert q.dtype == wick.dtype(name) and q.dtype.is_quantized and q.is_quantized
    assert q.shape == (6, 128)
    np.testing.assert_array_equal(np.asarray(q.dequantize()), ref)
    np.testing.assert_array_equal(np.asarray(wick.dequantize(wick.quantize(x, name))), ref)


# the largest error a block type allows, as a fraction of the block's max |x|
BOUND = {"q4_0": 1 / 7, "q4_1": 1 / 15, "q5_0": 1 / 15, "q5_1": 1 / 31, "q8_0": 1 / 127,
         "q4_K": 1 / 7, "q5_K": 1 / 15, "q6_K": 1 / 31, "q3_K": 1 / 3, "q2_K": 1 / 1.5, "iq4_nl": 1 / 6}


@pytest.mark.parametrize("name", sorted(BOUND))
def test_quantize_error_bounds(np, name):
    x = _data(np, (4, 512), seed=1)
    try:
        q = wick.quantize(x, name)
    except wick.NotCompiledError:
        pytest.skip("no quantizer for %s in this build" % name)
    d = np.asarray(q.dequantize())
    block = wick.dtype(name).block[0]
    xb = x.reshape(-1, block)
    err = np.abs(d.reshape(-1, block) - xb).max(axis=1)
    amax = np.abs(xb).max(axis=1)
    assert (err <= amax * BOUND[name] * 1.01 + 1e-6).all(), (name, (err / amax).max())
    # and it is not the zero tensor: most of the signal survives
    assert np.linalg.norm(d - x) < 0.5 * np.linalg.norm(x)


def test_quantize_inputs(np, quants, qtype):
    x = _data(np, (64, 32), seed=2)
    ref = quants.dequantize(quants.quantize(np.ascontiguousarray(x.T), qtype.Q8_0), qtype.Q8_0)
    # a transposed view, f64 and f16 inputs, a 3-D batch
    np.testing.assert_array_equal(np.asarray(wick.from_numpy(x).mT.quantize("q8_0").dequantize()), ref)
    np.testing.assert_array_equal(np.asarray(wick.from_numpy(x.T.astype(np.float64)).quantize("q8_0").dequantize()), ref)
    h = x.T.astype(np.float16)
    ref16 = quants.dequantize(quants.quantize(h.astype(np.float32), qtype.Q8_0), qtype.Q8_0)
    np.testing.assert_array_equal(np.asarray(wick.from_numpy(h).quantize(wick.q8_0).dequantize()), ref16)
    b = x.reshape(2, 32, 32)
    refb = quants.dequantize(quants.quantize(b, qtype.Q4_0), qtype.Q4_0)
    np.testing.assert_array_equal(np.asarray(wick.quantize(b, "q4_0").dequantize()), refb)
    # dequantize to other element dtypes
    q = wick.quantize(x, "q4_1")
    d32 = np.asarray(q.dequantize())
    np.testing.assert_array_equal(np.asarray(q.dequantize(dtype="f16")), d32.astype(np.float16))
    np.testing.assert_array_equal(np.asarray(q.dequantize(wick.f64)), d32.astype(np.float64))
    # an all-zero block and a one-block tensor
    z = wick.zeros(1, 32).quantize("q4_0").dequantize()
    assert z.tolist() == [[0.0] * 32]


def test_quantized_tensor_properties(np):
    x = _data(np, (4, 64))
    q = wick.quantize(x, "q4_0")
    assert q.shape == (4, 64) and q.ndim == 2 and q.dtype == wick.q4_0 and q.dtype.name == "q4_0"
    assert q.dtype.block == (32, 18) and q.dtype.itemsize == 0
    assert "q4_0" in repr(q)
    assert "q4_0" in repr(wick.quantize(x[:1, :32], "q4_0"))  # small enough to print values
    # reading values dequantizes (wick's to_host); numpy / buffer views need element dtypes
    assert q.tolist() == q.dequantize().tolist()
    with pytest.raises(TypeError):
        np.asarray(q)
    with pytest.raises(BufferError):
        memoryview(q)
    # element ops on blocks are wick.DTypeError; whole-row views work
    with pytest.raises(TypeError):  # py_tensor.c turns a failed number operand into NotImplemented
        q + 1
    with pytest.raises(wick.DTypeError):
        q * q
    np.testing.assert_array_equal(np.asarray(q[1:3].dequantize()), np.asarray(q.dequantize())[1:3])


def test_quantize_errors(np):
    x = wick.randn(4, 64)
    with pytest.raises(ValueError):
        x.quantize("f16")  # not a block dtype
    with pytest.raises(TypeError):
        x.quantize("q9_9")
    with pytest.raises(TypeError):
        x.quantize()
    with pytest.raises(wick.ShapeError):
        wick.randn(4, 33).quantize("q4_0")  # the last dim is not whole blocks
    with pytest.raises(wick.Error):
        wick.arange(64).quantize("q4_0")  # an integer tensor
    with pytest.raises(ValueError):
        x.quantize("q8_0").dequantize("q4_0")
    with pytest.raises(TypeError):
        wick.dequantize([1.0, 2.0])
    with pytest.raises(wick.Error):
        x.dequantize()  # not a block tensor


@pytest.mark.parametrize("name", ["q4_0", "q8_0", "q4_K", "q6_K"])
def test_qmatmul_vs_dequantized_matmul(np, name):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((48, 256)).astype(np.float32)
    x = rng.standard_normal((5, 256)).astype(np.float32)
    try:
        wq = wick.quantize(w, name)
    except wick.NotCompiledError:
        pytest.skip("no quantizer for %s" % name)
    ref = x @ np.asarray(wq.dequantize()).T
    y = wick.qmatmul(x, wq)
    assert y.shape == (5, 48) and y.dtype == wick.f32
    # x is quantized to q8 on the way (ggml's rule): a small relative error
    err = np.linalg.norm(np.asarray(y) - ref) / np.linalg.norm(ref)
    assert err < 1e-2, err
    # batch dims and a non-contiguous x
    xb = rng.standard_normal((2, 3, 256)).astype(np.float32)
    yb = wick.qmatmul(wick.from_numpy(xb), wq)
    assert yb.shape == (2, 3, 48)
    refb = xb @ np.asarray(wq.dequantize()).T
    assert np.linalg.norm(np.asarray(yb) - refb) / np.linalg.norm(refb) < 1e-2
    xt = wick.from_numpy(np.ascontiguousarray(x.T)).mT
    np.testing.assert_allclose(np.asarray(wick.qmatmul(xt, wq)), np.asarray(y), rtol=1e-5, atol=1e-5)


def test_qmatmul_f16_weight_and_errors(np):
    rng = np.random.default_rng(5)
    w = rng.standard_normal((8, 64)).astype(np.float16)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    y = wick.qmatmul(x, wick.from_numpy(w))
    np.testing.assert_allclose(np.asarray(y), x @ w.astype(np.float32).T, rtol=1e-4, atol=1e-4)
    wq = wick.quantize(w.astype(np.float32), "q8_0")
    with pytest.raises(wick.ShapeError):
        wick.qmatmul(wick.randn(3, 32), wq)  # K differs
    with pytest.raises(wick.DTypeError):
        wick.qmatmul(wick.ones(1, 64, dtype="i32"), wq)
    with pytest.raises(wick.DTypeError):
        wick.qmatmul(wick.randn(3, 64), wick.randn(8, 64))  # an f32 weight: use matmul
    with pytest.raises(TypeError):
        wick.qmatmul(wick.randn(3, 64), w)  # the weight must be a wick.Tensor
    with pytest.raises(wick.ShapeError):
        wick.qmatmul(wick.randn(3, 64), wick.quantize(wick.randn(2, 8, 64), "q8_0"))  # a 3-D weight


def test_no_leak(np, rss):
    x = wick.randn(1, 32)
    w = wick.quantize(wick.randn(4, 32), "q8_0")
    for _ in range(2000):
        x.quantize("q4_0").dequantize()
        wick.qmatmul(x, w)
    before = rss()
    for _ in range(100_000):
        x.quantize("q4_0").dequantize()
    for _ in range(30_000):
        wick.qmatmul(x, w)
    assert rss() - before < 8
