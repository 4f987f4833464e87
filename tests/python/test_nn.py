"""The nn ops and losses (python/src/py_nn.c) against torch.nn.functional
(Debian's torch 1.13; its missing rms_norm / rope / scaled_dot_product_attention
are written out in torch ops here)."""
import math

import pytest

import wick
import wick.nn.functional as F

# dtype -> (absolute, relative) tolerance against a float64 torch oracle run on
# the same (already rounded) inputs
TOL = {"f32": (2e-5, 2e-5), "f64": (1e-10, 1e-10), "f16": (4e-3, 4e-3), "bf16": (3e-2, 3e-2)}
FLOATS = ["f32", "f64", "f16", "bf16"]


@pytest.fixture(scope="module")
def tf(torch):
    return torch.nn.functional


def make(np, shape, dtype="f32", seed=0, scale=1.0):
    """A wick tensor of normal values in dtype (rounded to it)."""
    a = np.random.default_rng(seed).standard_normal(shape) * scale
    return wick.tensor(a.astype(np.float32), dtype=dtype)


def ref(torch, t):
    """The exact values of a wick tensor as a float64 torch tensor (any dtype)."""
    import numpy

    return torch.tensor(numpy.array(t.tolist(), dtype=numpy.float64)).reshape(t.shape)


def close(np, got, want, dtype):
    """got (wick) against want (torch, float64)."""
    assert got.shape == tuple(want.shape), (got.shape, tuple(want.shape))
    atol, rtol = TOL[str(dtype)]
    np.testing.assert_allclose(np.array(got.tolist(), dtype=np.float64).reshape(got.shape),
                               want.detach().double().numpy(), atol=atol, rtol=rtol)


# ---------------------------------------------------------------- softmax


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(np, torch, tf, dt, dim):
    x = make(np, (3, 4, 5), dt, scale=3)
    xr = ref(torch, x)
    close(np, wick.softmax(x, dim), tf.softmax(xr, dim), dt)
    close(np, F.log_softmax(x, dim=dim), tf.log_softmax(xr, dim), dt)
    close(np, x.softmax(dim), tf.softmax(xr, dim), dt)
    close(np, x.log_softmax(dim=dim), tf.log_softmax(xr, dim), dt)
    assert wick.softmax(x, dim).dtype == x.dtype


def test_softmax_layouts_and_edges(np, torch, tf):
    x = make(np, (4, 6), scale=2)
    xr = ref(torch, x)
    close(np, wick.softmax(x.mT, 1), tf.softmax(xr.T, 1), "f32")  # transposed view
    close(np, wick.softmax(x[:, 1:5], 0), tf.softmax(xr[:, 1:5], 0), "f32")  # sliced view
    close(np, wick.softmax(x[:, ::2], -1), tf.softmax(xr[:, ::2], -1), "f32")  # stepped copy
    one = wick.tensor([[2.5]])
    assert wick.softmax(one, 1).tolist() == [[1.0]] and wick.log_softmax(one, 0).tolist() == [[0.0]]
    assert wick.softmax(wick.zeros(0, 3), 1).shape == (0, 3)
    big = wick.tensor([[1000.0, 0.0], [-1000.0, 0.0]])  # no overflow: the max is subtracted
    close(np, wick.softmax(big, 1), tf.softmax(ref(torch, big), 1), "f32")
    # dtype= casts first, as torch's
    y = wick.softmax(x, 1, dtype="f64")
    assert y.dtype == wick.f64
    close(np, y, tf.softmax(xr, 1), "f64")


def test_softmax_errors(np):
    x = make(np, (2, 3))
    with pytest.raises(wick.IndexError):
        wick.softmax(x, 2)
    with pytest.raises(wick.DTypeError):
        wick.softmax(wick.tensor([1, 2]), 0)
    with pytest.raises(TypeError, match="dim is required"):
        wick.softmax(x)
    with pytest.raises(TypeError):
        wick.softmax([1.0, 2.0], 0)
    with pytest.raises(TypeError):
        x.softmax(0, colour=1)


# ---------------------------------------------------------- normalisation


@pytest.mark.parametrize("dt", FLOATS)
def test_layer_norm(np, torch, tf, dt):
    x = make(np, (2, 3, 8), dt, scale=2)
    w, b = make(np, (8,), dt, seed=1), make(np, (8,), dt, seed=2)
    xr, wr, br = ref(torch, x), ref(torch, w), ref(torch, b)
    close(np, wick.layer_norm(x, (8,), w, b), tf.layer_norm(xr, (8,), wr, br), dt)
    close(np, wick.layer_norm(x, 8), tf.layer_norm(xr, (8,)), dt)
    close(np, wick.layer_norm(x, [8], weight=w, eps=0.1), tf.layer_norm(xr, (8,), wr, eps=0.1), dt)
    close(np, wick.layer_norm(x, (8,), bias=b), tf.layer_norm(xr, (8,), None, br), dt)


def test_layer_norm_trailing_dims_and_views(np, torch, tf):
    x = make(np, (2, 3, 4, 5), "f64")
    w, b = make(np, (4, 5), "f64", 1), make(np, (4, 5), "f64", 2)
    xr = ref(torch, x)
    close(np, wick.layer_norm(x, (4, 5), w, b), tf.layer_norm(xr, (4, 5), ref(torch, w), ref(torch, b)), "f64")
    close(np, wick.layer_norm(x, (3, 4, 5)), tf.layer_norm(xr, (3, 4, 5)), "f64")
    xt = make(np, (6, 4))
    close(np, wick.layer_norm(xt.mT, (6,)), tf.layer_norm(ref(torch, xt).T, (6,)), "f32")
    one = wick.tensor([[3.0]])
    assert wick.layer_norm(one, (1,)).tolist() == [[0.0]]


def test_layer_norm_errors(np):
    x = make(np, (2, 3, 4))
    for bad in [(3,), (2, 3), (5,), (1, 2, 3, 4), ()]:
        with pytest.raises(ValueError, match="trailing dims"):
            wick.layer_norm(x, bad)
    with pytest.raises(wick.ShapeError):
        wick.layer_norm(x, (4,), wick.ones(3))
    with pytest.raises(wick.ShapeError):
        wick.layer_norm(x, (3, 4), wick.ones(4))
    with pytest.raises(TypeError):
        wick.layer_norm(x, (4,), weight=[1.0] * 4)
    with pytest.raises(wick.DTypeError):
        wick.layer_norm(wick.ones(2, 4, dtype="i32"), (4,))


def rms_norm_ref(torch, x, w, eps):
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    return y * w if w is not None else y


@pytest.mark.parametrize("dt", FLOATS)
def test_rms_norm(np, torch, dt):
    x = make(np, (3, 2, 16), dt, scale=3)
    w = make(np, (16,), dt, seed=3)
    xr, wr = ref(torch, x), ref(torch, w)
    close(np, wick.rms_norm(x, w), rms_norm_ref(torch, xr, wr, 1e-6), dt)
    close(np, F.rms_norm(x, eps=0.5), rms_norm_ref(torch, xr, None, 0.5), dt)
    close(np, wick.rms_norm(x[:, 1], w, 1e-3), rms_norm_ref(torch, xr[:, 1], wr, 1e-3), dt)
    with pytest.raises(wick.ShapeError):
        wick.rms_norm(x, wick.ones(8, dtype=dt))


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
def test_group_norm(np, torch, tf, dt):
    x = make(np, (3, 6, 4, 2), dt, scale=2)
    w, b = make(np, (6,), dt, 1), make(np, (6,), dt, 2)
    xr, wr, br = ref(torch, x), ref(torch, w), ref(torch, b)
    for g in (1, 2, 3, 6):
        close(np, wick.group_norm(x, g, w, b), tf.group_norm(xr, g, wr, br), dt)
    close(np, F.group_norm(x, 2, eps=0.1), tf.group_norm(xr, 2, eps=0.1), dt)
    x3 = make(np, (2, 4, 5), dt)  # (N, C, L), and a transposed (N, L, C) storage
    close(np, wick.group_norm(x3, 2), tf.group_norm(ref(torch, x3), 2), dt)
    xt = make(np, (2, 5, 4), dt)
    close(np, wick.group_norm(xt.mT, 4, w[:4]), tf.group_norm(ref(torch, xt).transpose(1, 2), 4, wr[:4]), dt)


def test_group_norm_errors(np):
    x = make(np, (2, 6, 3))
    with pytest.raises(wick.ShapeError, match="groups"):
        wick.group_norm(x, 4)
    with pytest.raises(wick.ShapeError, match="groups"):
        wick.group_norm(x, 0)
    with pytest.raises(wick.ShapeError):
        wick.group_norm(x, 2, wick.ones(3))
    with pytest.raises(wick.ShapeError):
        wick.group_norm(make(np, (6,)), 2)
    with pytest.raises(wick.DTypeError):
        wick.group_norm(wick.ones(2, 4, dtype="i32"), 2)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 4, 4)])
def test_batch_norm(np, torch, tf, shape):
    x = make(np, shape, "f64", scale=3)
    xr = ref(torch, x)
    w, b = make(np, (3,), "f64", 1), make(np, (3,), "f64", 2)
    wr, br = ref(torch, w), ref(torch, b)
    rm, rv = wick.zeros(3, dtype="f64"), wick.ones(3, dtype="f64")
    rmr, rvr = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for step in range(3):  # training: batch statistics, the running ones move
        xs = make(np, shape, "f64", seed=10 + step, scale=2)
        close(np, wick.batch_norm(xs, rm, rv, w, b, training=True, momentum=0.3),
              tf.batch_norm(ref(torch, xs), rmr, rvr, wr, br, training=True, momentum=0.3), "f64")
        close(np, rm, rmr, "f64")
        close(np, rv, rvr, "f64")  # the unbiased variance
    close(np, wick.batch_norm(x, rm, rv, w, b), tf.batch_norm(xr, rmr, rvr, wr, br), "f64")  # eval: running stats
    close(np, F.batch_norm(x, None, None, training=True), tf.batch_norm(xr, None, None, training=True), "f64")
    before = rm.tolist()
    wick.batch_norm(x, rm, rv, training=False)
    assert rm.tolist() == before  # eval does not touch the running stats


def test_batch_norm_dtypes_and_views(np, torch, tf):
    for dt in ("f32", "bf16"):
        x = make(np, (6, 4, 3), dt)
        rm, rv = wick.zeros(4, dtype=dt), wick.ones(4, dtype=dt)
        close(np, wick.batch_norm(x, rm, rv, training=True), tf.batch_norm(ref(torch, x), None, None, training=True),
              dt)
    xt = make(np, (3, 5), "f64")
    close(np, wick.batch_norm(xt.mT, None, None, training=True),
          tf.batch_norm(ref(torch, xt).T, None, None, training=True), "f64")


def test_batch_norm_errors(np):
    x = make(np, (4, 3, 2))
    with pytest.raises(ValueError, match="running_mean"):
        wick.batch_norm(x, None, None)
    with pytest.raises(ValueError, match="more than 1 value"):
        wick.batch_norm(make(np, (1, 3)), None, None, training=True)
    with pytest.raises(wick.ShapeError):
        wick.batch_norm(x, wick.zeros(4), wick.ones(4))
    with pytest.raises(wick.ShapeError):
        wick.batch_norm(make(np, (3,)), None, None, training=True)
    with pytest.raises(wick.DTypeError):
        wick.batch_norm(x, wick.zeros(3, dtype="f64"), wick.ones(3, dtype="f64"))
    with pytest.raises(TypeError):
        wick.batch_norm(x, [0.0] * 3, [1.0] * 3)


# ------------------------------------------------------------------ rope


def rope_ref(torch, x, cos, sin, interleaved):
    """x (..., T, D), cos / sin (T, D/2)."""
    if interleaved:
        a, b = x[..., 0::2], x[..., 1::2]
        out = torch.stack([a * cos - b * sin, a * sin + b * cos], -1)
        return out.flatten(-2)
    h = x.shape[-1] // 2
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("interleaved", [False, True])
def test_rope(np, torch, dt, interleaved):
    B, H, T, D = 2, 3, 5, 8
    x = make(np, (B, H, T, D), dt)
    ang = np.outer(np.arange(T), 1.0 / 10000 ** (np.arange(D // 2) * 2 / D))
    cos = wick.tensor(np.cos(ang).astype(np.float32), dtype=dt)
    sin = wick.tensor(np.sin(ang).astype(np.float32), dtype=dt)
    want = rope_ref(torch, ref(torch, x), ref(torch, cos), ref(torch, sin), interleaved)
    close(np, wick.rope(x, cos, sin, interleaved), want, dt)
    close(np, F.rope(x, cos, sin, interleaved=interleaved), want, dt)
    # the (B, T, H, D) layout: rope_thd of the transposed input, transposed back
    xt = wick.tensor(np.array(x.tolist(), dtype=np.float32).transpose(0, 2, 1, 3).copy(), dtype=dt)
    close(np, wick.rope_thd(xt, cos, sin, interleaved), want.transpose(1, 2), dt)


def test_rope_errors(np):
    x = make(np, (1, 1, 4, 6))
    cos = wick.ones(4, 3)
    with pytest.raises(wick.ShapeError):
        wick.rope(x, wick.ones(4, 2), wick.ones(4, 2))
    with pytest.raises(wick.ShapeError):
        wick.rope(make(np, (4, 6)), cos, cos)
    with pytest.raises(TypeError, match="sin"):
        wick.rope(x, cos, None)


# -------------------------------------------------------------- attention


def sdpa_ref(torch, q, k, v, mask=None, causal=False, scale=None):
    s = (q @ k.transpose(-1, -2)) * (scale if scale is not None else 1 / math.sqrt(q.shape[-1]))
    if mask is not None:
        s = s + mask
    if causal:
        lq, lk = s.shape[-2], s.shape[-1]
        s = s.masked_fill(torch.ones(lq, lk, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


@pytest.mark.parametrize("dt", FLOATS)
def test_sdpa(np, torch, dt):
    q, k, v = make(np, (2, 3, 4, 8), dt, 1), make(np, (2, 3, 6, 8), dt, 2), make(np, (2, 3, 6, 5), dt, 3)
    qr, kr, vr = ref(torch, q), ref(torch, k), ref(torch, v)
    close(np, wick.scaled_dot_product_attention(q, k, v), sdpa_ref(torch, qr, kr, vr), dt)
    close(np, F.scaled_dot_product_attention(q, k, v, is_causal=True), sdpa_ref(torch, qr, kr, vr, causal=True), dt)
    close(np, wick.scaled_dot_product_attention(q, k, v, scale=0.3), sdpa_ref(torch, qr, kr, vr, scale=0.3), dt)
    m = make(np, (4, 6), dt, 4)  # additive, broadcast over batch and heads
    close(np, wick.scaled_dot_product_attention(q, k, v, attn_mask=m), sdpa_ref(torch, qr, kr, vr, ref(torch, m)), dt)


def test_sdpa_masks_and_views(np, torch):
    q, k, v = make(np, (2, 4, 8), "f64", 1), make(np, (2, 5, 8), "f64", 2), make(np, (2, 5, 8), "f64", 3)
    qr, kr, vr = ref(torch, q), ref(torch, k), ref(torch, v)
    # boolean-like masks: nonzero = the key takes part (torch's bool masks)
    keep = np.random.default_rng(7).random((4, 5)) > 0.4
    keep[:, 0] = True
    add = torch.where(torch.from_numpy(keep), 0.0, float("-inf")).double()
    want = sdpa_ref(torch, qr, kr, vr, add)
    close(np, wick.scaled_dot_product_attention(q, k, v, wick.tensor(keep.astype(np.uint8))), want, "f64")
    close(np, wick.scaled_dot_product_attention(q, k, v, wick.tensor(keep.astype(np.int64))), want, "f64")
    # additive mask and causal together
    m = make(np, (1, 4, 5), "f64", 4)
    close(np, wick.scaled_dot_product_attention(q, k, v, m, is_causal=True),
          sdpa_ref(torch, qr, kr, vr, ref(torch, m), causal=True), "f64")
    # non-contiguous q / k: a transposed stored layout
    kt = make(np, (2, 8, 5), "f64", 5)
    close(np, wick.scaled_dot_product_attention(q, kt.mT, v), sdpa_ref(torch, qr, ref(torch, kt).transpose(-1, -2), vr),
          "f64")
    # a fully masked row gives NaN, as torch
    none = np.ones((4, 5), dtype=np.uint8)
    none[1] = 0
    out = wick.scaled_dot_product_attention(q, k, v, wick.tensor(none))
    assert all(math.isnan(x) for x in out[0, 1].tolist())


def test_sdpa_gqa_and_attention(np, torch):
    q = make(np, (1, 4, 3, 8), "f64", 1)
    k, v = make(np, (1, 2, 7, 8), "f64", 2), make(np, (1, 2, 7, 8), "f64", 3)
    qr, kr, vr = ref(torch, q), ref(torch, k), ref(torch, v)
    kx, vx = kr.repeat_interleave(2, 1), vr.repeat_interleave(2, 1)  # head h reads kv head h // 2
    close(np, wick.scaled_dot_product_attention(q, k, v, enable_gqa=True), sdpa_ref(torch, qr, kx, vx), "f64")
    # decoding: 3 queries at positions 4..6 of 7 keys, causal with q_offset
    off = 4
    allowed = torch.arange(7)[None, :] <= (torch.arange(3)[:, None] + off)
    add = torch.where(allowed, 0.0, float("-inf")).double()
    close(np, wick.attention(q, k, v, causal=True, q_offset=off), sdpa_ref(torch, qr, kx, vx, add), "f64")
    close(np, F.attention(q, k, v, scale=0.5), sdpa_ref(torch, qr, kx, vx, scale=0.5), "f64")
    # a sliding window of 2 and soft-capping (the cap before the mask)
    win = allowed & (torch.arange(3)[:, None] + off - torch.arange(7)[None, :] < 2)
    addw = torch.where(win, 0.0, float("-inf")).double()
    close(np, wick.attention(q, k, v, causal=True, q_offset=off, window=2), sdpa_ref(torch, qr, kx, vx, addw), "f64")
    s = 0.7 * torch.tanh((qr @ kx.transpose(-1, -2) / math.sqrt(8)) / 0.7) + addw
    close(np, wick.attention(q, k, v, causal=True, q_offset=off, window=2, softcap=0.7), torch.softmax(s, -1) @ vx,
          "f64")
    with pytest.raises(wick.ShapeError):
        wick.scaled_dot_product_attention(q, make(np, (1, 3, 7, 8), "f64"), make(np, (1, 3, 7, 8), "f64"),
                                          enable_gqa=True)


def test_sdpa_errors(np):
    q = make(np, (2, 4, 8))
    with pytest.raises(ValueError, match="dropout_p"):
        wick.scaled_dot_product_attention(q, q, q, dropout_p=0.1)
    with pytest.raises(ValueError, match="scale"):
        wick.scaled_dot_product_attention(q, q, q, scale=-1.0)
    with pytest.raises(wick.ShapeError):
        wick.scaled_dot_product_attention(q, make(np, (2, 4, 7)), q)
    with pytest.raises(wick.DTypeError):
        wick.scaled_dot_product_attention(q, q, q, attn_mask=wick.zeros(4, 4, dtype="f64"))
    with pytest.raises(TypeError, match="key"):
        wick.scaled_dot_product_attention(q, 1.0, q)


# ------------------------------------------------------ linear and friends


@pytest.mark.parametrize("dt", FLOATS)
def test_linear(np, torch, tf, dt):
    x, w, b = make(np, (2, 3, 5), dt, 1), make(np, (4, 5), dt, 2), make(np, (4,), dt, 3)
    xr, wr, br = ref(torch, x), ref(torch, w), ref(torch, b)
    close(np, wick.linear(x, w, b), tf.linear(xr, wr, br), dt)
    close(np, F.linear(x, w), tf.linear(xr, wr), dt)
    close(np, wick.linear(x[0, 1], w, b), tf.linear(xr[0, 1], wr, br), dt)  # 1-D input
    wt = make(np, (5, 4), dt, 4)  # a transposed weight view
    close(np, wick.linear(x, wt.mT, b), tf.linear(xr, ref(torch, wt).T, br), dt)
    assert wick.linear(wick.zeros(0, 5, dtype=dt), w).shape == (0, 4)


def test_linear_errors(np):
    x = make(np, (2, 5))
    with pytest.raises(wick.ShapeError):
        wick.linear(x, make(np, (4, 6)))
    with pytest.raises(wick.ShapeError):
        wick.linear(x, make(np, (5,)))
    with pytest.raises(wick.ShapeError):
        wick.linear(x, make(np, (4, 5)), make(np, (3,)))
    with pytest.raises(wick.DTypeError):
        wick.linear(x, make(np, (4, 5), "f64"))
    with pytest.raises(TypeError, match="weight"):
        wick.linear(x, [[1.0] * 5])


def test_swiglu(np, torch, tf):
    x = make(np, (3, 8), "f64")
    xr = ref(torch, x)
    close(np, wick.swiglu(x), tf.silu(xr[:, :4]) * xr[:, 4:], "f64")
    with pytest.raises(wick.ShapeError):
        wick.swiglu(make(np, (3, 5)))


def test_dropout(np):
    x = wick.ones(200, 100)
    wick.manual_seed(3)
    y = wick.dropout(x, 0.3)
    a = np.array(y.tolist())
    kept = a != 0
    assert abs(kept.mean() - 0.7) < 0.02  # 20000 draws: sd 0.003
    np.testing.assert_allclose(a[kept], 1 / 0.7, rtol=1e-6)
    wick.manual_seed(3)
    assert wick.dropout(x, 0.3).tolist() == y.tolist()  # the device's generator, seeded
    assert wick.dropout(x, 0.3, training=False) is x and wick.dropout(x, 0.0) is x
    assert np.array(wick.dropout(x, 1.0).tolist()).max() == 0.0
    z = wick.ones(4, 4, dtype="f64")
    assert wick.dropout(z, 0.5, inplace=True) is z and set(np.array(z.tolist()).ravel()) <= {0.0, 2.0}
    h = wick.dropout(wick.ones(64, dtype="bf16"), 0.5)
    assert h.dtype == wick.bf16 and set(h.tolist()) <= {0.0, 2.0}
    for p in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="p must be"):
            wick.dropout(x, p)
    with pytest.raises(wick.DTypeError):
        wick.dropout(wick.ones(3, dtype="i32"), 0.5)


# ---------------------------------------------------------- elementwise losses

REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("red", REDUCTIONS)
def test_regression_losses(np, torch, tf, dt, red):
    x, y = make(np, (4, 5), dt, 1, 2), make(np, (4, 5), dt, 2, 2)
    xr, yr = ref(torch, x), ref(torch, y)
    close(np, wick.mse_loss(x, y, reduction=red), tf.mse_loss(xr, yr, reduction=red), dt)
    close(np, wick.l1_loss(x, y, reduction=red), tf.l1_loss(xr, yr, reduction=red), dt)
    close(np, wick.huber_loss(x, y, reduction=red, delta=0.7), tf.huber_loss(xr, yr, reduction=red, delta=0.7), dt)
    close(np, wick.smooth_l1_loss(x, y, reduction=red, beta=0.5), tf.smooth_l1_loss(xr, yr, reduction=red, beta=0.5),
          dt)
    close(np, wick.smooth_l1_loss(x, y, reduction=red, beta=0.0), tf.l1_loss(xr, yr, reduction=red), dt)
    # non-contiguous operands
    close(np, F.mse_loss(x.mT, y.mT, reduction=red), tf.mse_loss(xr.T, yr.T, reduction=red), dt)


@pytest.mark.parametrize("red", REDUCTIONS)
def test_binary_losses(np, torch, tf, red):
    x = make(np, (6, 3), "f64", 1, 3)
    y = wick.tensor(np.random.default_rng(5).random((6, 3)))  # soft targets in [0, 1]
    w, pw = wick.rand(6, 3, dtype="f64"), wick.rand(3, dtype="f64") * 3
    xr, yr, wr, pwr = ref(torch, x), ref(torch, y), ref(torch, w), ref(torch, pw)
    close(np, wick.binary_cross_entropy_with_logits(x, y, reduction=red),
          tf.binary_cross_entropy_with_logits(xr, yr, reduction=red), "f64")
    close(np, F.binary_cross_entropy_with_logits(x, y, w, reduction=red, pos_weight=pw),
          tf.binary_cross_entropy_with_logits(xr, yr, wr, reduction=red, pos_weight=pwr), "f64")
    close(np, F.binary_cross_entropy_with_logits(x, y, pos_weight=pw, reduction=red),
          tf.binary_cross_entropy_with_logits(xr, yr, pos_weight=pwr, reduction=red), "f64")
    p = wick.tensor(np.random.default_rng(6).random((6, 3)))
    pr = ref(torch, p)
    close(np, wick.binary_cross_entropy(p, y, reduction=red), tf.binary_cross_entropy(pr, yr, reduction=red), "f64")
    close(np, wick.binary_cross_entropy(p, y, w, reduction=red), tf.binary_cross_entropy(pr, yr, wr, reduction=red),
          "f64")
    # saturated probabilities: torch clamps each log at -100
    e = wick.tensor([0.0, 1.0, 0.5], dtype="f64")
    t = wick.tensor([1.0, 0.0, 1.0], dtype="f64")
    close(np, wick.binary_cross_entropy(e, t, reduction=red),
          tf.binary_cross_entropy(ref(torch, e), ref(torch, t), reduction=red), "f64")


def test_elementwise_loss_errors(np):
    x = make(np, (2, 3))
    for f in (wick.mse_loss, wick.l1_loss, wick.huber_loss, wick.smooth_l1_loss, wick.binary_cross_entropy,
              wick.binary_cross_entropy_with_logits):
        with pytest.raises(wick.ShapeError):
            f(x, make(np, (3, 2)))
        with pytest.raises(wick.ShapeError):
            f(x, make(np, (3,)))  # no broadcasting
        with pytest.raises(ValueError, match="reduction"):
            f(x, x, reduction="avg")
        with pytest.raises(TypeError):
            f(x, x, reduction=1)
        with pytest.raises(TypeError):
            f(x, 1.0)
    with pytest.raises(wick.DTypeError):
        wick.mse_loss(x, make(np, (2, 3), "f64"))
    with pytest.raises(wick.DTypeError):
        wick.l1_loss(wick.ones(2, dtype="i32"), wick.ones(2, dtype="i32"))
    with pytest.raises(wick.ArgError):
        wick.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="beta"):
        wick.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(ValueError, match="deprecated"):
        wick.mse_loss(x, x, True)


@pytest.mark.parametrize("red", REDUCTIONS + ["batchmean"])
def test_kl_div(np, torch, tf, red):
    import warnings

    x = wick.log_softmax(make(np, (4, 5), "f64", 1), 1)
    tn = np.random.default_rng(3).random((4, 5))
    tn[0, 1] = 0.0  # a zero target contributes 0 (xlogy), not NaN
    tn /= tn.sum(1, keepdims=True)
    t = wick.tensor(tn)
    xr, tr = ref(torch, x), torch.from_numpy(tn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on 'mean'
        close(np, wick.kl_div(x, t, reduction=red), tf.kl_div(xr, tr, reduction=red), "f64")
        lt = wick.log_softmax(make(np, (4, 5), "f64", 4), 1)
        close(np, F.kl_div(x, lt, reduction=red, log_target=True),
              tf.kl_div(xr, ref(torch, lt), reduction=red, log_target=True), "f64")
    with pytest.raises(wick.ShapeError):
        wick.kl_div(x, make(np, (5, 4), "f64"))
    with pytest.raises(ValueError, match="reduction"):
        wick.kl_div(x, t, reduction="batch")


# --------------------------------------------------------- classification


def class_targets(np, shape, C, ignore_some=True, seed=0, dtype="i64"):
    t = np.random.default_rng(seed).integers(0, C, size=shape)
    if ignore_some and t.size > 2:
        t.flat[1] = -100
    return wick.tensor(t, dtype=dtype), t


@pytest.mark.parametrize("dt", ["f32", "f64", "bf16"])
@pytest.mark.parametrize("red", REDUCTIONS)
def test_cross_entropy_class_ids(np, torch, tf, dt, red):
    x = make(np, (7, 5), dt, 1, 2)
    t, tn = class_targets(np, (7,), 5)
    xr, tr = ref(torch, x), torch.from_numpy(tn)
    close(np, wick.cross_entropy(x, t, reduction=red), tf.cross_entropy(xr, tr, reduction=red), dt)
    close(np, F.cross_entropy(x, t, reduction=red, label_smoothing=0.2),
          tf.cross_entropy(xr, tr, reduction=red, label_smoothing=0.2), dt)
    lp = wick.log_softmax(x, 1)
    close(np, wick.nll_loss(lp, t, reduction=red), tf.nll_loss(tf.log_softmax(xr, 1), tr, reduction=red), dt)
    w = wick.tensor(np.random.default_rng(2).random(5) + 0.5, dtype=dt)
    wr = ref(torch, w)
    close(np, wick.cross_entropy(x, t, w, reduction=red), tf.cross_entropy(xr, tr, wr, reduction=red), dt)
    close(np, wick.cross_entropy(x, t, weight=w, reduction=red, label_smoothing=0.3),
          tf.cross_entropy(xr, tr, wr, reduction=red, label_smoothing=0.3), dt)
    close(np, wick.nll_loss(lp, t, w, reduction=red), tf.nll_loss(tf.log_softmax(xr, 1), tr, wr, reduction=red), dt)


@pytest.mark.parametrize("red", REDUCTIONS)
def test_cross_entropy_shapes(np, torch, tf, red):
    # (N, C, d1, d2) with (N, d1, d2), with and without class weights
    x = make(np, (2, 4, 3, 2), "f64", 1)
    t, tn = class_targets(np, (2, 3, 2), 4)
    xr, tr = ref(torch, x), torch.from_numpy(tn)
    w = wick.tensor([0.5, 1.0, 2.0, 1.5], dtype="f64")
    close(np, wick.cross_entropy(x, t, reduction=red), tf.cross_entropy(xr, tr, reduction=red), "f64")
    close(np, wick.cross_entropy(x, t, w, reduction=red, label_smoothing=0.1),
          tf.cross_entropy(xr, tr, ref(torch, w), reduction=red, label_smoothing=0.1), "f64")
    close(np, wick.nll_loss(x, t, reduction=red), tf.nll_loss(xr, tr, reduction=red), "f64")
    # unbatched (C) with a rank-0 target
    x1 = make(np, (4,), "f64", 3)
    close(np, wick.cross_entropy(x1, wick.tensor(2), reduction=red),
          tf.cross_entropy(ref(torch, x1), torch.tensor(2), reduction=red), "f64")
    # probability targets, with smoothing and weights, on (N, C) and (N, C, d)
    for shape in [(5, 4), (2, 4, 3)]:
        xp = make(np, shape, "f64", 4)
        pn = np.random.default_rng(9).random(shape)
        pn /= pn.sum(1, keepdims=True)
        p = wick.tensor(pn)
        xpr, pr = ref(torch, xp), torch.from_numpy(pn)
        close(np, wick.cross_entropy(xp, p, reduction=red), tf.cross_entropy(xpr, pr, reduction=red), "f64")
        close(np, wick.cross_entropy(xp, p, w, reduction=red, label_smoothing=0.25),
              tf.cross_entropy(xpr, pr, ref(torch, w), reduction=red, label_smoothing=0.25), "f64")


def test_cross_entropy_targets_and_views(np, torch, tf):
    x = make(np, (6, 5), "f32", 1)
    xr = ref(torch, x)
    for dt in ("i32", "u8", "u32", "i64"):
        t, tn = class_targets(np, (6,), 5, ignore_some=False, dtype=dt)
        close(np, wick.cross_entropy(x, t), tf.cross_entropy(xr, torch.from_numpy(tn)), "f32")
    t, tn = class_targets(np, (6,), 5)
    tr = torch.from_numpy(tn)
    # a custom ignore_index
    t2 = wick.tensor([0, 3, 3, 1, 4, 2])
    tr2 = torch.tensor([0, 3, 3, 1, 4, 2])
    close(np, wick.cross_entropy(x, t2, ignore_index=3), tf.cross_entropy(xr, tr2, ignore_index=3), "f32")
    # non-contiguous logits: the transpose of a (C, N) table
    xt = make(np, (5, 6), "f32", 2)
    close(np, wick.cross_entropy(xt.mT, t), tf.cross_entropy(ref(torch, xt).T, tr), "f32")
    # every row ignored: the mean is NaN, as torch's
    allign = wick.tensor([-100] * 6)
    assert math.isnan(wick.cross_entropy(x, allign).item())
    assert wick.cross_entropy(x, allign, reduction="sum").item() == 0.0


def test_classification_errors(np):
    x = make(np, (4, 3))
    t = wick.tensor([0, 1, 2, 0])
    with pytest.raises(wick.IndexError):
        wick.cross_entropy(x, wick.tensor([0, 1, 3, 0]))
    with pytest.raises(wick.IndexError):
        wick.cross_entropy(x, wick.tensor([0, 1, -1, 0]))
    with pytest.raises(wick.IndexError):  # the weighted path checks too
        wick.cross_entropy(x, wick.tensor([0, 1, 3, 0]), wick.ones(3))
    with pytest.raises(wick.ShapeError):
        wick.cross_entropy(x, wick.tensor([0, 1, 2]))
    with pytest.raises(wick.ShapeError):
        wick.cross_entropy(x, t, wick.ones(4))
    with pytest.raises(wick.ShapeError):
        wick.cross_entropy(x, make(np, (4, 2)))  # probabilities of another shape
    with pytest.raises(wick.DTypeError):
        wick.cross_entropy(wick.ones(4, 3, dtype="i64"), t)
    with pytest.raises(wick.DTypeError):
        wick.nll_loss(x, make(np, (4, 3)))
    with pytest.raises(ValueError, match="label_smoothing"):
        wick.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(TypeError, match="label_smoothing"):
        wick.nll_loss(x, t, label_smoothing=0.1)
    with pytest.raises(ValueError, match="reduction"):
        wick.nll_loss(x, t, reduction="batchmean")
    with pytest.raises(ValueError, match="deprecated"):
        wick.cross_entropy(x, t, None, True)
    with pytest.raises(TypeError, match="target"):
        wick.cross_entropy(x, [0, 1, 2, 0])


# --------------------------------------------------------------- autograd

needs_backward = pytest.mark.skipif(not hasattr(wick.Tensor, "backward"),
                                    reason="autograd from Python (py_autograd) is not in this build")


def leaf(t):
    t.requires_grad = True
    return t


@needs_backward
def test_gradients_match_torch(np, torch, tf):
    x = leaf(make(np, (6, 5), "f64", 1))
    w = wick.tensor([0.5, 1.0, 2.0, 1.5, 0.7], dtype="f64")  # torch has no gradient for class weights
    xr = ref(torch, x).requires_grad_()
    wr = ref(torch, w)
    t = wick.tensor([0, 1, -100, 3, 4, 2])
    tr = torch.tensor([0, 1, -100, 3, 4, 2])
    for weight, weight_r, ls in [(None, None, 0.0), (w, wr, 0.0), (w, wr, 0.1), (None, None, 0.2)]:
        x.grad = None
        xr.grad = None
        wick.cross_entropy(x, t, weight, label_smoothing=ls).backward()
        tf.cross_entropy(xr, tr, weight_r, label_smoothing=ls).backward()
        close(np, x.grad, xr.grad, "f64")
    # probability targets on (N, C, d)
    xs = leaf(make(np, (2, 3, 4), "f64", 6))
    xsr = ref(torch, xs).requires_grad_()
    pn = np.random.default_rng(1).random((2, 3, 4))
    wick.cross_entropy(xs, wick.tensor(pn), label_smoothing=0.1).backward()
    tf.cross_entropy(xsr, torch.from_numpy(pn), label_smoothing=0.1).backward()
    close(np, xs.grad, xsr.grad, "f64")
    # bce with logits, pos_weight
    z = leaf(make(np, (4, 3), "f64", 7))
    zr = ref(torch, z).requires_grad_()
    yz = wick.tensor(np.random.default_rng(2).random((4, 3)))
    pw = wick.tensor([0.5, 2.0, 3.0], dtype="f64")
    wick.binary_cross_entropy_with_logits(z, yz, pos_weight=pw).backward()
    tf.binary_cross_entropy_with_logits(zr, ref(torch, yz), pos_weight=ref(torch, pw)).backward()
    close(np, z.grad, zr.grad, "f64")
    # layer_norm over two trailing dims, through the reshapes
    y = leaf(make(np, (3, 2, 4), "f64", 2))
    g = leaf(make(np, (2, 4), "f64", 3))
    yr, gr = ref(torch, y).requires_grad_(), ref(torch, g).requires_grad_()
    (wick.layer_norm(y, (2, 4), g) * 1.5).sum().backward()
    (tf.layer_norm(yr, (2, 4), gr) * 1.5).sum().backward()
    close(np, y.grad, yr.grad, "f64")
    close(np, g.grad, gr.grad, "f64")
    # linear and softmax
    a, b = leaf(make(np, (3, 4), "f64", 4)), leaf(make(np, (2, 4), "f64", 5))
    ar, br = ref(torch, a).requires_grad_(), ref(torch, b).requires_grad_()
    wick.softmax(wick.linear(a, b), 1).sum().backward()
    tf.softmax(tf.linear(ar, br), 1).sum().backward()
    close(np, a.grad, ar.grad, "f64")
    close(np, b.grad, br.grad, "f64")


@needs_backward
def test_norm_gradients_match_torch(np, torch, tf):
    x = leaf(make(np, (4, 6, 3), "f64", 1))
    w, b = leaf(make(np, (6,), "f64", 2)), leaf(make(np, (6,), "f64", 3))
    xr, wr, br = (ref(torch, t).requires_grad_() for t in (x, w, b))
    c = make(np, (4, 6, 3), "f64", 4)  # a random cotangent
    cr = ref(torch, c)
    (wick.group_norm(x, 3, w, b) * c).sum().backward()
    (tf.group_norm(xr, 3, wr, br) * cr).sum().backward()
    for ours, theirs in ((x, xr), (w, wr), (b, br)):
        close(np, ours.grad, theirs.grad, "f64")
        ours.grad = None
    rm, rv = wick.zeros(6, dtype="f64"), wick.ones(6, dtype="f64")
    (wick.batch_norm(x, rm, rv, w, b, training=True) * c).sum().backward()
    xr.grad = wr.grad = br.grad = None
    (tf.batch_norm(xr, torch.zeros(6, dtype=torch.float64), torch.ones(6, dtype=torch.float64), wr, br,
                   training=True) * cr).sum().backward()
    for ours, theirs in ((x, xr), (w, wr), (b, br)):
        close(np, ours.grad, theirs.grad, "f64")
    assert not rm.requires_grad and not rv.requires_grad  # the running stats stay out of the graph


@needs_backward
def test_dropout_gradient_follows_the_mask(np):
    x = leaf(wick.ones(50, 40, dtype="f64"))
    y = wick.dropout(x, 0.25)
    y.sum().backward()
    np.testing.assert_allclose(np.array(x.grad.tolist()), np.array(y.tolist()))


# ----------------------------------------------------------------- leaks


def test_no_leak_under_repeated_calls(np, rss):
    x = make(np, (4, 5))
    t = wick.tensor([0, 1, -100, 4])
    w = wick.ones(5)
    q = make(np, (1, 2, 3, 4))
    for _ in range(2000):  # warm up: allocator pools, caches
        wick.softmax(x, 1)
        wick.cross_entropy(x, t, w, label_smoothing=0.1)
    before = rss()
    for _ in range(100_000):
        wick.softmax(x, 1)
    for _ in range(20_000):
        wick.cross_entropy(x, t, w, label_smoothing=0.1)  # the composite path (a wick scope)
        wick.scaled_dot_product_attention(q, q, q, wick.ones(3, 3, dtype="u8"))
        try:
            wick.mse_loss(x, t)
        except wick.Error:
            pass
    assert rss() - before < 8.0
