"""Convolutions, pooling and resampling (python/src/ops_conv.c) against
torch.nn.functional: f32 / f64 compared with torch on the same dtype, f16 /
bf16 against torch in f64 on the rounded inputs; non-contiguous inputs,
unbatched inputs, torch's per-dim tuples and string paddings, and errors."""
import pytest

import wick

FLOATS = ["f32", "f64", "f16", "bf16"]
TOL = {"f32": 1e-4, "f64": 1e-10, "f16": 3e-2, "bf16": 2e-1}


@pytest.fixture(scope="module")
def F(torch):
    return torch.nn.functional


def tdtype(torch, dt):
    return {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16}[dt]


def mk(np, torch, rng, shape, dt):
    """Random values in dtype dt: (wick tensor, torch f64 tensor of the same rounded values)."""
    x = torch.from_numpy(rng.standard_normal(shape)).to(tdtype(torch, dt)).double()
    return wick.tensor(x.numpy(), dtype=dt), x


def close(np, w, ref, dt):
    assert w.shape == tuple(ref.shape)
    got = np.asarray(wick.tensor(w, dtype="f64"))
    np.testing.assert_allclose(got, ref.numpy(), rtol=TOL[dt], atol=TOL[dt])


CONV2D = [
    dict(),
    dict(stride=2),
    dict(padding=1),
    dict(padding=(1, 2)),  # unequal: padded explicitly first
    dict(padding=(0, 1), stride=(2, 2)),
    dict(padding="same"),
    dict(padding="same", dilation=2),
    dict(padding="valid"),
    dict(dilation=(2, 2), padding=2),
    dict(groups=2),
    dict(groups=2, stride=2, padding=1, bias=True),
    dict(bias=True),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", CONV2D, ids=[str(k) for k in CONV2D])
def test_conv2d(np, torch, F, dt, kw):
    rng = np.random.default_rng(1)
    kw = dict(kw)
    groups = kw.get("groups", 1)
    x, tx = mk(np, torch, rng, (2, 4, 7, 6), dt)
    w, tw = mk(np, torch, rng, (6, 4 // groups, 3, 2), dt)
    b, tb = mk(np, torch, rng, (6,), dt) if kw.pop("bias", False) else (None, None)
    close(np, wick.conv2d(x, w, b, **kw), F.conv2d(tx, tw, tb, **kw), dt)
    # the same through a transposed (non-contiguous) input
    xt, txt = x.transpose(2, 3), tx.transpose(2, 3)
    close(np, wick.conv2d(xt, w, bias=b, **kw), F.conv2d(txt, tw, bias=tb, **kw), dt)
    # unbatched (C, H, W)
    close(np, wick.conv2d(x[1], w, b, **kw), F.conv2d(tx[1:2], tw, tb, **kw)[0], dt)


CONV1D = [dict(), dict(stride=3, padding=2), dict(padding="same", dilation=3), dict(groups=3, bias=True),
          dict(padding=(1,), stride=(2,), dilation=(2,))]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", CONV1D, ids=[str(k) for k in CONV1D])
def test_conv1d(np, torch, F, dt, kw):
    rng = np.random.default_rng(2)
    kw = dict(kw)
    groups = kw.get("groups", 1)
    x, tx = mk(np, torch, rng, (2, 6, 11), dt)
    w, tw = mk(np, torch, rng, (3, 6 // groups, 4), dt)
    b, tb = mk(np, torch, rng, (3,), dt) if kw.pop("bias", False) else (None, None)
    close(np, wick.conv1d(x, w, b, **kw), F.conv1d(tx, tw, tb, **kw), dt)
    close(np, wick.conv1d(x[:, :, 2:], w, b, **kw), F.conv1d(tx[:, :, 2:], tw, tb, **kw), dt)
    close(np, wick.conv1d(x[0], w, b, **kw), F.conv1d(tx[:1], tw, tb, **kw)[0], dt)


CONVT2D = [
    dict(),
    dict(stride=2),
    dict(stride=2, padding=1, output_padding=1),
    dict(stride=2, padding=(1, 0), output_padding=(1, 0)),  # unequal: a crop of the full output
    dict(stride=3, padding=(2, 0), output_padding=(0, 2)),
    dict(stride=(2, 2), padding=(0, 1), output_padding=(1, 1)),
    dict(dilation=2, padding=1),
    dict(groups=2, stride=2, bias=True),
    dict(bias=True, padding=1),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", CONVT2D, ids=[str(k) for k in CONVT2D])
def test_conv_transpose2d(np, torch, F, dt, kw):
    rng = np.random.default_rng(3)
    kw = dict(kw)
    groups = kw.get("groups", 1)
    x, tx = mk(np, torch, rng, (2, 4, 5, 4), dt)
    w, tw = mk(np, torch, rng, (4, 6 // groups, 3, 2), dt)
    b, tb = mk(np, torch, rng, (6,), dt) if kw.pop("bias", False) else (None, None)
    close(np, wick.conv_transpose2d(x, w, b, **kw), F.conv_transpose2d(tx, tw, tb, **kw), dt)
    close(np, wick.conv_transpose2d(x.mT, w, b, **kw), F.conv_transpose2d(tx.mT, tw, tb, **kw), dt)
    close(np, wick.conv_transpose2d(x[0], w, b, **kw), F.conv_transpose2d(tx[:1], tw, tb, **kw)[0], dt)


CONVT1D = [dict(), dict(stride=2, padding=1, output_padding=1), dict(stride=3, dilation=2, padding=2, bias=True),
           dict(groups=2, output_padding=(1,), stride=(2,))]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", CONVT1D, ids=[str(k) for k in CONVT1D])
def test_conv_transpose1d(np, torch, F, dt, kw):
    rng = np.random.default_rng(4)
    kw = dict(kw)
    groups = kw.get("groups", 1)
    x, tx = mk(np, torch, rng, (2, 4, 9), dt)
    w, tw = mk(np, torch, rng, (4, 2 // groups * 2, 3), dt)
    b, tb = mk(np, torch, rng, (tw.shape[1] * groups,), dt) if kw.pop("bias", False) else (None, None)
    close(np, wick.conv_transpose1d(x, w, b, **kw), F.conv_transpose1d(tx, tw, tb, **kw), dt)
    close(np, wick.conv_transpose1d(x[..., 1:], w, b, **kw), F.conv_transpose1d(tx[..., 1:], tw, tb, **kw), dt)
    close(np, wick.conv_transpose1d(x[1], w, b, **kw), F.conv_transpose1d(tx[1:], tw, tb, **kw)[0], dt)


def test_conv_edge_cases(np, torch, F):
    rng = np.random.default_rng(5)
    # one element everywhere
    x, tx = mk(np, torch, rng, (1, 1, 1, 1), "f64")
    w, tw = mk(np, torch, rng, (1, 1, 1, 1), "f64")
    close(np, wick.conv2d(x, w), F.conv2d(tx, tw), "f64")
    close(np, wick.conv_transpose2d(x, w, stride=2, output_padding=1), F.conv_transpose2d(tx, tw, stride=2, output_padding=1), "f64")
    # an empty batch
    x, tx = mk(np, torch, rng, (0, 2, 5, 5), "f32")
    w, tw = mk(np, torch, rng, (3, 2, 3, 3), "f32")
    close(np, wick.conv2d(x, w, padding=1), F.conv2d(tx, tw, padding=1), "f32")
    # keyword arguments by torch's names
    x, tx = mk(np, torch, rng, (1, 2, 6, 6), "f32")
    close(np, wick.conv2d(input=x, weight=w, stride=2, padding=1, dilation=1, groups=1),
          F.conv2d(input=tx, weight=tw, stride=2, padding=1), "f32")


def test_conv_errors():
    x, w = wick.ones(1, 4, 5, 5), wick.ones(2, 4, 3, 3)
    with pytest.raises(ValueError, match="stride"):
        wick.conv2d(x, w, stride=(1, 2))
    with pytest.raises(ValueError, match="dilation"):
        wick.conv2d(x, w, dilation=(2, 1))
    with pytest.raises(ValueError):
        wick.conv2d(x, w, padding="full")
    with pytest.raises(ValueError):
        wick.conv2d(x, w, padding="same", stride=2)
    with pytest.raises(ValueError):
        wick.conv2d(x, w, padding=(1, 2, 3))
    with pytest.raises(wick.ShapeError):
        wick.conv2d(x, wick.ones(2, 3, 3, 3))  # channels
    with pytest.raises(wick.ShapeError):
        wick.conv2d(x, w, groups=3)
    with pytest.raises(wick.ShapeError):
        wick.conv2d(wick.ones(4, 5), w)  # rank
    with pytest.raises(wick.ShapeError):
        wick.conv2d(x, w, wick.ones(2, 1))  # bias rank
    with pytest.raises(wick.ShapeError):
        wick.conv2d(x, w, wick.ones(3))  # bias size
    with pytest.raises(wick.ShapeError):
        wick.conv2d(wick.ones(1, 4, 2, 2), w)  # kernel larger than the input
    with pytest.raises(wick.ShapeError):  # the cropped output of unequal paddings is empty
        wick.conv_transpose2d(x, wick.ones(4, 1, 2, 2), stride=2, padding=(6, 0))
    with pytest.raises(wick.ShapeError):  # the same with one padding: wick's own check
        wick.conv_transpose2d(x, wick.ones(4, 1, 2, 2), stride=2, padding=6)
    with pytest.raises(wick.DTypeError):
        wick.conv2d(x, wick.ones(2, 4, 3, 3, dtype="f64"))
    with pytest.raises(wick.DTypeError):
        wick.conv2d(wick.ones(1, 4, 5, 5, dtype="i64"), wick.ones(2, 4, 3, 3, dtype="i64"))
    with pytest.raises(wick.DTypeError):
        wick.conv2d(x, w, wick.ones(2, dtype="f64"))
    with pytest.raises(wick.ArgError):
        wick.conv2d(x, w, padding=-1)
    with pytest.raises(wick.ArgError):
        wick.conv2d(x, w, stride=0)
    with pytest.raises(wick.ArgError):
        wick.conv_transpose2d(x, wick.ones(4, 2, 3, 3), stride=2, output_padding=2)
    with pytest.raises(wick.ArgError):
        wick.conv_transpose2d(x, wick.ones(4, 2, 3, 3), stride=2, padding=(1, 0), output_padding=(2, 0))
    with pytest.raises(TypeError):
        wick.conv2d(x, [[1.0]])
    with pytest.raises(TypeError):
        wick.conv2d(x, w, bias=3.0)
    with pytest.raises(TypeError):
        wick.conv2d(x, w, stride=1.5)
    with pytest.raises(TypeError):
        wick.conv2d(x, w, padding=None, bogus=1)
    with pytest.raises(TypeError):
        wick.conv_transpose2d(x, w, padding="same")
    with pytest.raises(TypeError):
        wick.conv1d(x)


POOLS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1)),
    dict(kernel_size=3, stride=1),
    dict(kernel_size=(3, 1), stride=[]),  # an empty stride means kernel_size (torch)
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", POOLS, ids=[str(k) for k in POOLS])
def test_pool2d(np, torch, F, dt, kw):
    rng = np.random.default_rng(6)
    x, tx = mk(np, torch, rng, (2, 3, 7, 6), dt)
    for name in ("max_pool2d", "avg_pool2d"):
        ref = getattr(F, name)
        close(np, getattr(wick, name)(x, **kw), ref(tx, **kw), dt)
        close(np, getattr(wick, name)(x.mT, **kw), ref(tx.mT, **kw), dt)
        close(np, getattr(wick, name)(x[0], **kw), ref(tx[:1], **kw)[0], dt)
    if kw.get("padding"):
        close(np, wick.avg_pool2d(x, count_include_pad=False, **kw), F.avg_pool2d(tx, count_include_pad=False, **kw), dt)
    for cip in (True, False):
        close(np, wick.avg_pool2d(x, divisor_override=5, count_include_pad=cip, **kw),
              F.avg_pool2d(tx, divisor_override=5, count_include_pad=cip, **kw), dt)


@pytest.mark.parametrize("dt", FLOATS)
def test_pool1d(np, torch, F, dt):
    rng = np.random.default_rng(7)
    x, tx = mk(np, torch, rng, (2, 3, 10), dt)
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(4,), stride=(3,))):
        close(np, wick.max_pool1d(x, **kw), F.max_pool1d(tx, **kw), dt)
        close(np, wick.avg_pool1d(x, **kw), F.avg_pool1d(tx, **kw), dt)
        close(np, wick.max_pool1d(x[..., 1:], **kw), F.max_pool1d(tx[..., 1:], **kw), dt)
        close(np, wick.avg_pool1d(x[1], **kw), F.avg_pool1d(tx[1:], **kw)[0], dt)
    close(np, wick.avg_pool1d(x, 3, 2, 1, count_include_pad=False), F.avg_pool1d(tx, 3, 2, 1, count_include_pad=False), dt)


def test_pool_errors():
    x = wick.ones(1, 2, 5, 5)
    with pytest.raises(ValueError, match="ceil_mode"):
        wick.max_pool2d(x, 2, ceil_mode=True)
    with pytest.raises(ValueError, match="ceil_mode"):
        wick.avg_pool2d(x, 2, ceil_mode=True)
    with pytest.raises(ValueError):
        wick.max_pool2d(x, 2, dilation=2)
    with pytest.raises(ValueError):
        wick.max_pool2d(x, 2, return_indices=True)
    with pytest.raises(ValueError):
        wick.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(wick.ArgError):
        wick.max_pool2d(x, 2, padding=2)  # padding > kernel / 2
    with pytest.raises(wick.ArgError):
        wick.avg_pool2d(x, 0)
    with pytest.raises(wick.ShapeError):
        wick.max_pool2d(x, 6)  # window larger than the input
    with pytest.raises(wick.ShapeError):
        wick.max_pool2d(wick.ones(5, 5), 2)
    with pytest.raises(wick.DTypeError):
        wick.avg_pool2d(wick.ones(1, 1, 4, 4, dtype="i32"), 2)
    with pytest.raises(TypeError):
        wick.max_pool2d(x)
    with pytest.raises(TypeError):
        wick.max_pool2d(x, "2")
    with pytest.raises(TypeError):
        wick.max_pool2d([[1.0]], 2)


UP2D = [
    dict(size=(9, 5)),
    dict(size=4),
    dict(scale_factor=2),
    dict(scale_factor=1.7),
    dict(scale_factor=(1.5, 0.5)),
    dict(size=(9, 5), mode="bilinear"),
    dict(size=(3, 2), mode="bilinear"),
    dict(size=(9, 13), mode="bilinear", align_corners=True),
    dict(scale_factor=(1.5, 2.25), mode="bilinear"),
    dict(scale_factor=2, mode="bilinear", align_corners=True),
    dict(scale_factor=1.3, mode="bilinear", recompute_scale_factor=True),
    dict(scale_factor=1.3, recompute_scale_factor=True),
]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", UP2D, ids=[str(k) for k in UP2D])
def test_interpolate2d(np, torch, F, dt, kw):
    rng = np.random.default_rng(8)
    x, tx = mk(np, torch, rng, (2, 3, 5, 4), dt)
    close(np, wick.interpolate(x, **kw), F.interpolate(tx, **kw), dt)
    close(np, wick.interpolate(x.mT, **kw), F.interpolate(tx.mT, **kw), dt)
    up = {k: v for k, v in kw.items() if k != "recompute_scale_factor"}
    close(np, wick.upsample(x, **up), F.interpolate(tx, **up), dt)


UP1D = [dict(size=9), dict(scale_factor=1.5), dict(size=3, mode="linear"), dict(scale_factor=2.5, mode="linear"),
        dict(size=11, mode="linear", align_corners=True), dict(size=1, mode="linear", align_corners=True),
        dict(scale_factor=3, mode="linear", align_corners=True)]


@pytest.mark.parametrize("dt", FLOATS)
@pytest.mark.parametrize("kw", UP1D, ids=[str(k) for k in UP1D])
def test_interpolate1d(np, torch, F, dt, kw):
    rng = np.random.default_rng(9)
    x, tx = mk(np, torch, rng, (2, 3, 6), dt)
    close(np, wick.interpolate(x, **kw), F.interpolate(tx, **kw), dt)
    close(np, wick.interpolate(x[..., 1:], **kw), F.interpolate(tx[..., 1:], **kw), dt)


def test_upsample_functions(np, torch, F):
    import warnings
    rng = np.random.default_rng(10)
    x, tx = mk(np, torch, rng, (1, 2, 4, 3), "f32")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's upsample_* are deprecated names
        for kw in (dict(size=(7, 5)), dict(scale_factor=2)):
            close(np, wick.upsample_bilinear(x, **kw), F.upsample_bilinear(tx, **kw), "f32")
            close(np, wick.upsample_bilinear2d(x, **kw), F.upsample_bilinear(tx, **kw), "f32")
            close(np, wick.upsample_nearest(x, **kw), F.upsample_nearest(tx, **kw), "f32")
            close(np, wick.upsample_nearest2d(x, **kw), F.upsample_nearest(tx, **kw), "f32")
    # nearest keeps integer dtypes (torch's CPU kernel has u8)
    xi = wick.tensor(np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4))
    ref = F.interpolate(torch.arange(12, dtype=torch.uint8).reshape(1, 1, 3, 4), scale_factor=2)
    r = wick.interpolate(xi, scale_factor=2)
    assert r.dtype is wick.u8 and np.array_equal(np.asarray(r), ref.numpy())


def test_interpolate_errors():
    x = wick.ones(1, 2, 4, 4)
    with pytest.raises(ValueError):
        wick.interpolate(x)  # neither size nor scale
    with pytest.raises(ValueError):
        wick.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(ValueError):
        wick.interpolate(x, size=3, mode="bicubic")
    with pytest.raises(ValueError):
        wick.interpolate(x, size=3, align_corners=True)  # nearest has no corners
    with pytest.raises(ValueError):
        wick.interpolate(x, size=(3, 3, 3))
    with pytest.raises(ValueError):
        wick.interpolate(x, scale_factor=(2, 2, 2))
    with pytest.raises(ValueError):
        wick.interpolate(x, scale_factor=-1.0)
    with pytest.raises(ValueError):
        wick.interpolate(x, scale_factor=float("inf"))
    with pytest.raises(ValueError):
        wick.interpolate(x, size=3, mode="bilinear", antialias=True)
    with pytest.raises(wick.ShapeError):
        wick.interpolate(wick.ones(1, 1, 2, 2, 2), size=3)
    with pytest.raises(wick.ShapeError):
        wick.interpolate(x, size=5, mode="linear")  # linear is 1-D
    with pytest.raises(wick.ShapeError):
        wick.interpolate(wick.ones(1, 2, 4), size=5, mode="bilinear")
    with pytest.raises(wick.ShapeError):
        wick.interpolate(x, size=0)
    with pytest.raises(wick.ShapeError):
        wick.interpolate(x, scale_factor=0.1)  # output size 0
    with pytest.raises(wick.DTypeError):
        wick.interpolate(wick.ones(1, 1, 2, 2, dtype="i64"), size=3, mode="bilinear")
    with pytest.raises(TypeError):
        wick.interpolate(x, size="3")
    with pytest.raises(TypeError):
        wick.interpolate(x, size=3, mode=1)
    with pytest.raises(TypeError):
        wick.interpolate([1.0], size=3)


def test_threads(np):
    """Convs and pools from several threads at once (they run without the GIL)."""
    import threading
    rng = np.random.default_rng(11)
    x = wick.tensor(rng.standard_normal((2, 8, 40, 40)).astype(np.float32))
    w = wick.tensor(rng.standard_normal((8, 8, 3, 3)).astype(np.float32))
    ref = [np.asarray(wick.conv2d(x, w, padding=1)), np.asarray(wick.max_pool2d(x, 2)),
           np.asarray(wick.interpolate(x, scale_factor=2, mode="bilinear"))]
    errors = []

    def work():
        try:
            for _ in range(5):
                got = [wick.conv2d(x, w, padding=1), wick.max_pool2d(x, 2),
                       wick.interpolate(x, scale_factor=2, mode="bilinear")]
                for g, r in zip(got, ref):
                    np.testing.assert_array_equal(np.asarray(g), r)
        except Exception as e:  # noqa: BLE001 (reported below, in the main thread)
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_leak_check(rss):
    x, w, b = wick.ones(1, 2, 5, 5), wick.ones(3, 2, 3, 3), wick.ones(3)
    wt = wick.ones(2, 1, 2, 2)

    def others():  # every other entry point, fewer rounds
        wick.conv_transpose2d(x, wt, stride=2, padding=(1, 0), output_padding=(1, 0))
        wick.max_pool1d(x[0], 2)
        wick.avg_pool2d(x, 2, divisor_override=3)
        wick.upsample_bilinear(x, scale_factor=2)
        wick.interpolate(x[0], size=7, mode="linear")

    for _ in range(2000):
        wick.conv2d(x, w, b, padding=(1, 0))
        others()
    before = rss()
    for i in range(100_000):
        wick.conv2d(x, w, b, padding=(1, 0))  # bias, explicit padding: the composed path
        if i % 10 == 0:
            others()
            try:
                wick.conv2d(x, w, stride=(1, 2))
            except ValueError:
                pass
    grown = rss() - before
    assert grown < 8, f"RSS grew {grown:.1f} MiB over 100k conv2d calls"
