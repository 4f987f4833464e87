"""The safetensors oracle for tests/test_safetensors_oracle.c, run with the
project venv's Python (pinned safetensors==0.8.0, Debian's numpy).

  st_oracle.py write DIR   the reference library writes files wick must read:
                           DIR/all.safetensors (every dtype wick reads, 0-d and
                           empty tensors, metadata), DIR/np.safetensors (through
                           safetensors.numpy.save_file), DIR/unsupported.safetensors
                           (dtypes wick lacks), DIR/sharded/ (two shards and
                           model.safetensors.index.json). For each file F a
                           manifest F.txt lists, one tensor per line,
                           "name DTYPE rank dims... hexbytes" (the exact bytes
                           the reference wrote), and metadata lines "@meta key value"
                           (hex-encoded UTF-8).
  st_oracle.py check DIR   reads DIR/wick_layouts.safetensors and
                           DIR/wick_np.safetensors, which wick wrote from views
                           of known values (the C test builds the same values),
                           and exits 1 naming the first difference.
"""
import json
import os
import struct
import sys

import numpy as np
import safetensors
import safetensors.numpy
from safetensors import TensorSpec

# safetensors dtype name -> the TensorSpec dtype name (torch spelling)
SPEC = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "F8_E4M3": "float8_e4m3fn",
        "I64": "int64", "I32": "int32", "I16": "int16", "U8": "uint8", "U32": "uint32", "BOOL": "bool",
        "I8": "int8", "U16": "uint16", "U64": "uint64"}


def bf16_bits(x):
    """bf16 bit patterns of float32 values exactly representable in bf16."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32)
    assert np.all((b & 0xFFFF) == 0), "value not exact in bf16"
    return (b >> 16).astype(np.uint16)


# f8 e4m3 (fn) bit patterns of a few exact values: sign, 4-bit exponent (bias 7), 3-bit mantissa.
F8_VALUES = {0.0: 0x00, 0.5: 0x30, 1.0: 0x38, -2.0: 0xC0, 448.0: 0x7E, -0.015625: 0xA8, 1.125: 0x39}


def tensor_set(rng):
    """name -> (safetensors dtype, shape, raw numpy array holding the bytes)."""
    t = {}
    t["f64"] = ("F64", (2, 3), rng.standard_normal((2, 3)))
    t["f32"] = ("F32", (3, 4), rng.standard_normal((3, 4)).astype(np.float32))
    t["f16"] = ("F16", (5,), rng.standard_normal(5).astype(np.float16))
    t["bf16"] = ("BF16", (2, 2), bf16_bits(np.array([[1.5, -2.0], [0.25, 3.0]], np.float32)))
    t["f8_e4m3"] = ("F8_E4M3", (7,), np.array(list(F8_VALUES.values()), np.uint8))
    t["i64"] = ("I64", (4,), np.array([-(2 ** 62), -1, 0, 2 ** 62 + 7], np.int64))
    t["i32"] = ("I32", (2, 2, 2), rng.integers(-2 ** 31, 2 ** 31 - 1, (2, 2, 2), dtype=np.int32))
    t["i16"] = ("I16", (3,), np.array([-32768, 0, 32767], np.int16))
    t["u8"] = ("U8", (6,), np.arange(250, 256, dtype=np.uint8))
    t["u32"] = ("U32", (2,), np.array([0, 2 ** 32 - 1], np.uint32))
    t["bool"] = ("BOOL", (4,), np.array([1, 0, 0, 1], np.uint8))
    t["scalar_f32"] = ("F32", (), np.array(3.25, np.float32))
    t["empty_f32"] = ("F32", (0, 3), np.zeros((0, 3), np.float32))
    t["empty_i64"] = ("I64", (2, 0), np.zeros((2, 0), np.int64))
    t["nd_f32"] = ("F32", (1, 2, 1, 2, 1, 2, 1, 2), rng.standard_normal(16).astype(np.float32).reshape((1, 2, 1, 2, 1, 2, 1, 2)))
    t["ünï/côdé.weight"] = ("F16", (2,), np.array([1.0, -1.0], np.float16))
    return t


def specs(ts):
    keep = []
    out = {}
    for name, (dt, shape, arr) in ts.items():
        a = np.ascontiguousarray(arr)
        keep.append(a)
        out[name] = TensorSpec(dtype=SPEC[dt], shape=list(shape), data_ptr=a.ctypes.data, data_len=a.nbytes)
    return out, keep


def write_manifest(path, ts, meta):
    with open(path + ".txt", "w", encoding="utf-8") as f:
        for name, (dt, shape, arr) in ts.items():
            raw = np.ascontiguousarray(arr).tobytes()
            f.write("%s %s %d %s %s\n" % (name.encode().hex(), dt, len(shape), " ".join(str(d) for d in shape),
                                          raw.hex() if raw else "-"))
        for k, v in (meta or {}).items():
            f.write("@meta %s %s\n" % (k.encode().hex(), v.encode().hex() if v else "-"))


def write(d):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(11)
    ts = tensor_set(rng)
    meta = {"format": "pt", "ünicode ✓": "a \"quoted\"\nvalue", "empty": ""}
    sp, keep = specs(ts)
    safetensors.serialize_file(sp, os.path.join(d, "all.safetensors"), metadata=meta)
    write_manifest(os.path.join(d, "all.safetensors"), ts, meta)

    # safetensors.numpy, the API users call
    npt = {"a": rng.standard_normal((3, 5)).astype(np.float32), "b": np.arange(7, dtype=np.int64),
           "c": rng.standard_normal((2, 2)).astype(np.float64), "d": np.array([True, False, True]),
           "e": np.arange(4, dtype=np.uint8).reshape(2, 2)}
    safetensors.numpy.save_file(npt, os.path.join(d, "np.safetensors"), metadata={"format": "np"})
    dmap = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64", np.dtype(np.float64): "F64",
            np.dtype(bool): "BOOL", np.dtype(np.uint8): "U8"}
    write_manifest(os.path.join(d, "np.safetensors"), {k: (dmap[v.dtype], v.shape, v) for k, v in npt.items()},
                   {"format": "np"})

    # dtypes wick has no dtype for: listed, but getting them is an error
    un = {"i8": ("I8", (3,), np.array([-1, 0, 1], np.int8)), "u16": ("U16", (2,), np.array([1, 65535], np.uint16)),
          "u64": ("U64", (1,), np.array([2 ** 64 - 1], np.uint64)), "ok": ("F32", (2,), np.array([1, 2], np.float32))}
    sp, keep2 = specs(un)
    safetensors.serialize_file(sp, os.path.join(d, "unsupported.safetensors"))
    write_manifest(os.path.join(d, "unsupported.safetensors"), un, None)

    # a sharded checkpoint, as transformers writes it
    sd = os.path.join(d, "sharded")
    os.makedirs(sd, exist_ok=True)
    shard_t = [{"model.embed.weight": rng.standard_normal((4, 3)).astype(np.float32),
                "model.layers.0.w": rng.standard_normal((3, 3)).astype(np.float32)},
               {"model.layers.1.w": rng.standard_normal((3, 3)).astype(np.float32),
                "model.norm.weight": rng.standard_normal(3).astype(np.float16),
                "lm_head.step": np.array(5, dtype=np.int64)}]
    weight_map, total = {}, 0
    names = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for fname, tdict in zip(names, shard_t):
        safetensors.numpy.save_file(tdict, os.path.join(sd, fname), metadata={"format": "np", "shard": fname})
        for k, v in tdict.items():
            weight_map[k] = fname
            total += v.nbytes
    with open(os.path.join(sd, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total, "note": "two shards", "nested": {"x": 1}},
                   "weight_map": weight_map}, f, indent=2)
    dm = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16", np.dtype(np.int64): "I64"}
    allt = {k: (dm[v.dtype], v.shape, v) for td in shard_t for k, v in td.items()}
    write_manifest(os.path.join(sd, "model.safetensors.index.json"), allt,
                   {"total_size": str(total), "note": "two shards", "format": "np", "shard": names[0]})
    del keep, keep2


# ------------------------------------------------------------------ check

def expected_layouts():
    """What test_safetensors_oracle.c writes into wick_layouts.safetensors:
    name -> (dtype, numpy array of the values; bf16/f8 as bit patterns)."""
    base = np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1.0
    e = {}
    e["plain"] = ("F32", base)
    e["transposed"] = ("F32", base.T)
    e["broadcast"] = ("F64", np.broadcast_to(np.arange(3, dtype=np.float64) * 1.5, (4, 3)))
    e["narrowed"] = ("I32", np.arange(20, dtype=np.int32).reshape(4, 5)[1:3, 1:4])
    e["permuted"] = ("I64", (np.arange(24, dtype=np.int64) - 5).reshape(2, 3, 4).transpose(2, 0, 1))
    e["scalar"] = ("F16", np.array(1.5, np.float16))
    e["empty"] = ("I64", np.zeros((0, 3), np.int64))
    e["bf16"] = ("BF16", bf16_bits(base.T[::2]))
    e["f8"] = ("F8_E4M3", np.array(list(F8_VALUES.values()), np.uint8))
    e["u8"] = ("U8", np.arange(5, dtype=np.uint8)[::-1] * 3)
    e["u32"] = ("U32", np.array([[7, 4000000000]], np.uint32).T)
    e["i16"] = ("I16", np.array([-300, 300], np.int16))
    return e, {"author": "wick", "ünicode ✓": "a \"quoted\"\nvalue\ttab"}


def fail(msg):
    print("st_oracle check: " + msg)
    sys.exit(1)


def check(d):
    path = os.path.join(d, "wick_layouts.safetensors")
    raw = open(path, "rb").read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    if hlen % 8:
        fail("header length %d is not a multiple of 8" % hlen)
    if raw[8 + hlen - 1:8 + hlen] not in (b"}", b" "):
        fail("header does not end in '}' or padding")
    exp, meta = expected_layouts()
    got = dict(safetensors.deserialize(raw))
    if sorted(got) != sorted(exp):
        fail("names %s != %s" % (sorted(got), sorted(exp)))
    header = json.loads(raw[8:8 + hlen])
    if header.get("__metadata__") != meta:
        fail("metadata %r != %r" % (header.get("__metadata__"), meta))
    for name, (dt, arr) in exp.items():
        g = got[name]
        if g["dtype"].upper() not in (dt, SPEC[dt].upper()):
            fail("%s: dtype %s != %s" % (name, g["dtype"], dt))
        if list(g["shape"]) != list(arr.shape):
            fail("%s: shape %s != %s" % (name, g["shape"], list(arr.shape)))
        if bytes(g["data"]) != np.ascontiguousarray(arr).tobytes():
            fail("%s: bytes differ" % name)
        start = header[name]["data_offsets"][0]
        size = np.dtype(arr.dtype).itemsize
        if (8 + hlen + start) % size:
            fail("%s: data at file offset %d is not aligned for its %d-byte elements" % (name, 8 + hlen + start, size))
    # the numpy API reads what wick wrote
    with safetensors.safe_open(path, framework="np") as f:
        if f.metadata() != meta:
            fail("safe_open metadata %r" % f.metadata())
    npf = safetensors.numpy.load_file(os.path.join(d, "wick_np.safetensors"))
    for name, (dt, arr) in exp.items():
        if dt in ("BF16", "F8_E4M3"):
            continue
        if name not in npf:
            fail("wick_np.safetensors lacks %s" % name)
        if npf[name].dtype != arr.dtype or npf[name].shape != arr.shape or not np.array_equal(npf[name], arr):
            fail("wick_np.safetensors: %s differs: %r vs %r" % (name, npf[name], arr))
    print("st_oracle check: %d tensors match" % len(exp))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        print(__doc__)
        sys.exit(2)
    (write if sys.argv[1] == "write" else check)(sys.argv[2])
