"""Model files from Python: safetensors (against the PyPI `safetensors`
package), GGUF written by wick read by the PyPI `gguf` package, .npy / .npz
(against numpy). Hostile files raise wick's classes. The real SmolLM2 GGUF
against gguf-py is test_gguf_model.py (label model: gguf-py takes ~10 s to
parse its vocabulary)."""
import gc
import os

import pytest

import wick

@pytest.fixture(scope="module")
def st_np():
    return pytest.importorskip("safetensors.numpy")


@pytest.fixture(scope="module")
def gguf():
    return pytest.importorskip("gguf")


NP_DTYPES = ["float32", "float64", "float16", "int64", "int32", "int16", "uint8"]


def test_safetensors_from_pypi(np, st_np, tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for dt in NP_DTYPES:
        a = rng.standard_normal((3, 5)) * 50
        arrays["t_" + dt] = a.astype(dt)
    arrays["empty"] = np.zeros((0, 4), np.float32)
    arrays["scalar"] = np.array(3.5, np.float32)
    arrays["flag"] = np.array([True, False, True])
    p = str(tmp_path / "a.safetensors")
    st_np.save_file(arrays, p, metadata={"format": "np", "who": "pypi"})
    d = wick.load_safetensors(p)
    assert sorted(d) == sorted(arrays)
    for k, a in arrays.items():
        t = d[k]
        assert t.shape == a.shape, k
        if a.dtype == np.bool_:
            assert t.dtype == wick.u8  # safetensors BOOL reads as u8 0/1
            assert t.tolist() == a.astype(np.uint8).tolist()
        else:
            assert t.dtype == wick.dtype(str(a.dtype)), k
            np.testing.assert_array_equal(np.asarray(t), a)
    with wick.SafeTensors(p) as f:
        assert f.metadata == {"format": "np", "who": "pypi"}
        assert f.keys() == sorted(arrays)
        assert len(f) == len(arrays) and "t_float32" in f and "nope" not in f
        info = f.info("t_float16")
        assert info["st_dtype"] == "F16" and info["dtype"] == wick.f16 and info["shape"] == (3, 5)
        assert info["nbytes"] == 30
        assert f.info("flag")["st_dtype"] == "BOOL"
        g = f.get("t_float64", dtype="f32")
        assert g.dtype == wick.f32
        np.testing.assert_allclose(np.asarray(g), arrays["t_float64"].astype(np.float32))
        np.testing.assert_array_equal(np.asarray(f["t_int32"]), arrays["t_int32"])
        with pytest.raises(KeyError):
            f.get("nope")
        with pytest.raises(TypeError):
            f.get(3)
    assert f.closed
    with pytest.raises(ValueError):
        f.keys()
    # dtype= converts the float tensors only
    d16 = wick.load_safetensors(p, dtype=wick.f16)
    assert d16["t_float32"].dtype == wick.f16 and d16["t_int64"].dtype == wick.i64
    with pytest.raises(ValueError):
        wick.load_safetensors(p, dtype="i32")
    assert wick.load(p).keys() == d.keys()


def _bf16_bits(np, x):
    """bf16 bit patterns of f32 values that bf16 holds exactly (the high halves)."""
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _read_safetensors(np, path):
    """The format by hand: 8-byte header length, JSON, raw little-endian data."""
    import json
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    return header, raw[8 + n:]


def test_safetensors_bf16_both_ways(np, tmp_path):
    import json
    rng = np.random.default_rng(3)
    # values bf16 holds exactly: f32s with the low 16 bits cleared
    x = (rng.standard_normal((4, 6)).astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)
    bits = _bf16_bits(np, x)
    header = {"x": {"dtype": "BF16", "shape": [4, 6], "data_offsets": [0, bits.nbytes]}}
    hb = json.dumps(header).encode()
    hb += b" " * (-len(hb) % 8)
    p = str(tmp_path / "b.safetensors")
    with open(p, "wb") as f:
        f.write(len(hb).to_bytes(8, "little") + hb + bits.tobytes())
    d = wick.load_safetensors(p)
    assert d["x"].dtype == wick.bf16 and d["x"].shape == (4, 6)
    assert d["x"].tolist() == x.tolist()
    # wick writes bf16 (from a transposed view); read the bytes back by hand
    w = wick.tensor(x.tolist(), dtype="bf16").mT
    q = str(tmp_path / "c.safetensors")
    wick.save_safetensors(q, {"w": w, "x": d["x"]}, metadata={"k": "v"})
    header, data = _read_safetensors(np, q)
    assert header["__metadata__"] == {"k": "v"}
    for name, want in (("w", x.T), ("x", x)):
        e = header[name]
        assert e["dtype"] == "BF16" and e["shape"] == list(want.shape)
        a, b = e["data_offsets"]
        got = np.frombuffer(data[a:b], np.uint16).reshape(want.shape)
        np.testing.assert_array_equal(got, _bf16_bits(np, want))


def test_safetensors_to_pypi(np, st_np, tmp_path):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 6)).astype(np.float32)
    tensors = {
        "a": wick.from_numpy(a),
        "at": wick.from_numpy(a).mT,               # a transposed view: written row-major
        "i": wick.tensor([[1, 2, 3]], dtype="i32"),
        "d": wick.from_numpy(a.astype(np.float64))[1:3],
        "n": a[:, ::2],                             # a numpy array works as well
    }
    p = str(tmp_path / "w.safetensors")
    wick.save_safetensors(p, tensors, metadata={"format": "wick"})
    back = st_np.load_file(p)
    np.testing.assert_array_equal(back["a"], a)
    np.testing.assert_array_equal(back["at"], a.T)
    np.testing.assert_array_equal(back["i"], np.array([[1, 2, 3]], np.int32))
    np.testing.assert_array_equal(back["d"], a.astype(np.float64)[1:3])
    np.testing.assert_array_equal(back["n"], a[:, ::2])
    from safetensors import safe_open
    with safe_open(p, "np") as f:
        assert f.metadata() == {"format": "wick"}
    wick.save(str(tmp_path / "s.safetensors"), {"a": tensors["a"]})
    np.testing.assert_array_equal(st_np.load_file(str(tmp_path / "s.safetensors"))["a"], a)


def test_safetensors_save_errors(tmp_path):
    p = str(tmp_path / "e.safetensors")
    q = wick.randn(2, 32).quantize("q4_0")
    with pytest.raises(wick.DTypeError):
        wick.save_safetensors(p, {"q": q})
    with pytest.raises(wick.ArgError):
        wick.save_safetensors(p, {"": wick.ones(2)})
    with pytest.raises(TypeError):
        wick.save_safetensors(p, [wick.ones(2)])
    with pytest.raises(TypeError):
        wick.save_safetensors(p, {"a": wick.ones(2)}, metadata={"k": 1})
    with pytest.raises(TypeError):
        wick.save_safetensors(p, {1: wick.ones(2)})
    with pytest.raises(TypeError):
        wick.save_safetensors(p, {"a": object()})
    with pytest.raises(TypeError):
        wick.save_safetensors(42, {"a": wick.ones(2)})
    assert not os.path.exists(p)
    with pytest.raises(wick.IOError):
        wick.save_safetensors(str(tmp_path / "no" / "dir" / "x.safetensors"), {"a": wick.ones(2)})


def test_mmap_outlives_the_file_object(np, st_np, tmp_path):
    a = np.arange(1000, dtype=np.float32).reshape(10, 100)
    p = str(tmp_path / "m.safetensors")
    st_np.save_file({"a": a}, p)
    f = wick.SafeTensors(p)
    t = f.get("a")
    f.close()
    del f
    gc.collect()
    view = np.asarray(t)
    np.testing.assert_array_equal(view, a)
    assert not view.flags.writeable  # a read-only view of the mapping
    row = t[3]
    del t, view
    gc.collect()
    assert row.tolist() == a[3].tolist()
    # a dict from load_safetensors: the loader is gone at once
    d = wick.load_safetensors(p)
    assert d["a"][9].tolist() == a[9].tolist()


def _noise(n):
    import random
    r = random.Random(0)  # the same bytes every run
    return bytes(r.randrange(256) for _ in range(n))


def _header_file(tmp_path, name, body):
    p = tmp_path / name
    p.write_bytes(body)
    return str(p)


def test_hostile_safetensors(np, st_np, tmp_path):
    good = str(tmp_path / "g.safetensors")
    st_np.save_file({"a": np.ones((8, 8), np.float32)}, good)
    raw = open(good, "rb").read()
    cases = {
        "truncated": raw[:-10],
        "short": raw[:5],
        "empty": b"",
        "huge_header": (2 ** 62).to_bytes(8, "little") + b"{}",
        "bad_json": (8).to_bytes(8, "little") + b"{notjson",
        "wrong_size": (len(raw) - 8 + 100).to_bytes(8, "little") + raw[8:],
        "garbage": _noise(256),
    }
    for name, body in cases.items():
        p = _header_file(tmp_path, name + ".safetensors", body)
        with pytest.raises(wick.FormatError) as e:
            wick.SafeTensors(p)
        assert isinstance(e.value, ValueError) and "wk_safetensors_open" in str(e.value), name
        with pytest.raises(wick.Error):
            wick.load_safetensors(p)
    with pytest.raises(wick.IOError) as e:
        wick.SafeTensors(str(tmp_path / "missing.safetensors"))
    assert isinstance(e.value, OSError)
    with pytest.raises(TypeError):
        wick.SafeTensors(None)


def test_npy_npz(np, tmp_path):
    rng = np.random.default_rng(2)
    for dt in NP_DTYPES:
        a = (rng.standard_normal((3, 4)) * 20).astype(dt)
        p = str(tmp_path / ("a_%s.npy" % dt))
        np.save(p, a)
        t = wick.load(p)
        assert t.dtype == wick.dtype(dt)
        np.testing.assert_array_equal(np.asarray(t), a)
        q = str(tmp_path / ("b_%s.npy" % dt))
        wick.save(q, wick.from_numpy(a).mT)  # non-contiguous
        np.testing.assert_array_equal(np.load(q), a.T)
    f = str(tmp_path / "f.npy")
    np.save(f, np.asfortranarray(np.arange(12.0).reshape(3, 4)))
    np.testing.assert_array_equal(np.asarray(wick.load(f)), np.arange(12.0).reshape(3, 4))
    z = str(tmp_path / "z.npz")
    np.savez(z, x=np.arange(5), y=np.ones((2, 2), np.float32))
    d = wick.load_npz(z)
    assert sorted(d) == ["x", "y"]
    np.testing.assert_array_equal(np.asarray(d["x"]), np.arange(5))
    dz = str(tmp_path / "dz.npz")
    np.savez_compressed(dz, w=np.arange(100, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(wick.load(dz)["w"]), np.arange(100, dtype=np.float32))
    w = str(tmp_path / "w.npz")
    wick.save_npz(w, {"a": wick.arange(6), "b": wick.ones(2, 3).mT})
    with np.load(w) as back:
        np.testing.assert_array_equal(back["a"], np.arange(6))
        np.testing.assert_array_equal(back["b"], np.ones((3, 2), np.float32))
    wick.save(str(tmp_path / "v.npz"), {"a": wick.arange(3)})
    assert np.load(str(tmp_path / "v.npz"))["a"].tolist() == [0, 1, 2]
    with pytest.raises(ValueError):
        wick.save(str(tmp_path / "v.bin"), {"a": wick.arange(3)})


def test_hostile_npy(tmp_path):
    for name, body in {"magic": b"NOTNUMPY" * 8, "trunc": b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', "}.items():
        p = _header_file(tmp_path, name + ".npy", body)
        with pytest.raises(wick.FormatError):
            wick.load(p)
    with pytest.raises(wick.Error):
        wick.load_npz(_header_file(tmp_path, "bad.npz", b"PK\x03\x04" + b"\x00" * 30))
    with pytest.raises(wick.IOError):
        wick.load(str(tmp_path / "missing.npy"))


# ---- GGUF ----

def test_save_gguf_round_trip(np, gguf, tmp_path):
    p = str(tmp_path / "w.gguf")
    a = np.arange(64, dtype=np.float32).reshape(2, 32) / 7
    meta = {
        "general.architecture": "test",
        "general.alignment": 64,
        "t.i32": -5,
        "t.big": 2 ** 40,
        "t.f32": 0.5,
        "t.bool": True,
        "t.u8": (7, "u8"),
        "t.f64": (0.1, "f64"),
        "t.ints": [1, 2, 3],
        "t.floats": [1.5, 2],
        "t.strs": ["a", "bé", ""],
        "t.u16s": ([1, 65535], "array[u16]"),
        "t.empty": ([], "i32"),
    }
    tensors = {"a": wick.from_numpy(a), "h": wick.from_numpy(a).mT, "q": wick.from_numpy(a).quantize("q8_0")}
    wick.save_gguf(p, meta, tensors)
    r = gguf.GGUFReader(p)
    f = r.fields
    assert f["general.architecture"].contents() == "test"
    assert f["t.i32"].contents() == -5 and f["t.i32"].types[0] == gguf.GGUFValueType.INT32
    assert f["t.big"].contents() == 2 ** 40 and f["t.big"].types[0] == gguf.GGUFValueType.INT64
    assert f["general.alignment"].types[0] == gguf.GGUFValueType.UINT32
    assert f["t.u8"].types[0] == gguf.GGUFValueType.UINT8 and f["t.u8"].contents() == 7
    assert f["t.f64"].contents() == 0.1
    assert f["t.bool"].contents() is True
    assert f["t.ints"].contents() == [1, 2, 3]
    assert f["t.floats"].contents() == [1.5, 2.0]
    assert f["t.strs"].contents() == ["a", "bé", ""]
    assert f["t.u16s"].contents() == [1, 65535]
    ts = {t.name: t for t in r.tensors}
    np.testing.assert_array_equal(ts["a"].data, a)
    np.testing.assert_array_equal(ts["h"].data.reshape(32, 2), a.T)
    assert ts["q"].tensor_type == gguf.GGMLQuantizationType.Q8_0
    from gguf import quants
    np.testing.assert_array_equal(quants.dequantize(ts["q"].data, ts["q"].tensor_type),
                                  np.asarray(tensors["q"].dequantize()))
    # and wick reads its own file back with the same types
    g = wick.GGUF(p)
    assert g.metadata["t.strs"] == ["a", "bé", ""] and g.types["t.u16s"] == "array[u16]"
    assert g.alignment == 64
    m = g.metadata
    m["t.i32"] = 99  # a caller's copy: the reader's values do not change
    assert g.metadata["t.i32"] == -5
    q = str(tmp_path / "copy.gguf")
    wick.save_gguf(q, {k: (v, g.types[k]) for k, v in g.metadata.items()}, g.tensors())
    g2 = wick.GGUF(q)
    assert g2.metadata == g.metadata and g2.types == g.types
    np.testing.assert_array_equal(np.asarray(g2.tensor("a")), a)


def test_save_gguf_errors(tmp_path):
    p = str(tmp_path / "e.gguf")
    with pytest.raises(ValueError):
        wick.save_gguf(p, {"k": []})
    with pytest.raises(ValueError):
        wick.save_gguf(p, {"k": (1, "u7")})
    with pytest.raises(TypeError):
        wick.save_gguf(p, {"k": object()})
    with pytest.raises(TypeError):
        wick.save_gguf(p, {"k": [1, "a"]})
    with pytest.raises(OverflowError):
        wick.save_gguf(p, {"k": (300, "u8")})
    with pytest.raises(TypeError):
        wick.save_gguf(p, {"k": (1.5, "i32")})
    with pytest.raises(TypeError):
        wick.save_gguf(p, [("k", 1)])
    with pytest.raises(wick.DTypeError):
        wick.save_gguf(p, {}, {"u": wick.ones(2, dtype="u8")})
    with pytest.raises(wick.ShapeError):
        wick.save_gguf(p, {}, {"r5": wick.ones(1, 1, 1, 1, 2)})
    with pytest.raises(wick.ArgError):
        wick.save_gguf(p, {"": 1})


def test_hostile_gguf(np, tmp_path):
    good = str(tmp_path / "good.gguf")
    wick.save_gguf(good, {"general.architecture": "t", "t.strs": ["x" * 10] * 50}, {"a": wick.ones(4, 32)})
    raw = open(good, "rb").read()
    assert wick.GGUF(good).metadata["t.strs"] == ["x" * 10] * 50
    cases = {
        "truncated": raw[:-100],
        "header_only": raw[:300],
        "magic": b"GGUX" + raw[4:],
        "version": raw[:4] + (99).to_bytes(4, "little") + raw[8:],
        "tiny": raw[:10],
        "kvcount": raw[:16] + (2 ** 60).to_bytes(8, "little") + raw[24:],
        "tensorcount": raw[:8] + (2 ** 40).to_bytes(8, "little") + raw[16:],
        "garbage": b"GGUF" + _noise(512),
    }
    for name, body in cases.items():
        p = _header_file(tmp_path, name + ".gguf", body)
        with pytest.raises(wick.FormatError, match="wk_gguf_open"):
            wick.GGUF(p)
    with pytest.raises(wick.IOError):
        wick.GGUF(str(tmp_path / "missing.gguf"))


def test_no_leak(np, st_np, tmp_path, rss):
    p = str(tmp_path / "l.safetensors")
    st_np.save_file({"a": np.ones((4, 4), np.float32)}, p)
    q = str(tmp_path / "l.gguf")
    wick.save_gguf(q, {"k": [1, 2, 3], "s": "str"}, {"w": wick.ones(2, 32).quantize("q4_0")})
    f = wick.SafeTensors(p)
    g = wick.GGUF(q)
    for _ in range(2000):
        f.get("a")
        g.tensor("w")
    before = rss()
    for _ in range(100_000):
        f.get("a")
    for _ in range(30_000):
        g.tensor("w")
        f.info("a")
    assert rss() - before < 8
    for _ in range(200):
        wick.SafeTensors(p).close()
        wick.GGUF(q).metadata
    before = rss()
    for _ in range(3000):
        wick.SafeTensors(p).get("a")
        with wick.GGUF(q) as h:
            h.tensor("w")
            h.metadata
    assert rss() - before < 8
