"""GGUF oracle for tests/test_gguf.c, run with the project venv's python
(gguf==0.19.0, see scripts/setup.sh).

  gguf_oracle.py gen OUTDIR       write GGUFs with gguf-py's GGUFWriter
                                  (every metadata type, arrays incl. strings,
                                  alignment 32 and 64, element and block
                                  tensors) and, beside each X.gguf, X.txt: what
                                  gguf-py's GGUFReader sees in it
  gguf_oracle.py dump FILE OUT    the same listing of any GGUF (e.g. the real
                                  model: every tensor's checksum)
  gguf_oracle.py compare A B [NAMEHEX...]
                                  exit 0 when GGUFReader sees the same
                                  metadata (types, values, order) and tensors
                                  (name, type, shape, bytes) in A and B, but
                                  for A's tensors named (hex) after B

Listing lines (the C test parses them; hex keeps every byte exact):
  kv KEYHEX TYPE VALUE               scalar: ints decimal, floats float.hex(),
                                     bool 0/1, string hex ('-' when empty)
  arr KEYHEX ELEMTYPE N V1 V2 ...    elements as for scalars
  t NAMEHEX GGMLTYPE RANK D0.. NBYTES SUM   dims outermost first (wick's order)
SUM is a position-weighted sum of the bytes read as little-endian u64 words
(zero-padded), mod 2^64, xor nbytes * 0x9E3779B97F4A7C15; the C side computes
the same.
"""
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFReader, GGUFValueType as V, GGUFWriter
from gguf.quants import quantize

MASK = (1 << 64) - 1


def checksum(b: bytes) -> int:
    n = len(b)
    a = np.frombuffer(b + bytes((-n) % 8), dtype="<u8")
    i = np.arange(a.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        s = int((a * (np.uint64(2) * i + np.uint64(1))).sum(dtype=np.uint64))
    return s ^ ((n * 0x9E3779B97F4A7C15) & MASK)


def hexs(b: bytes) -> str:
    return b.hex() if b else "-"


def scalar_text(t: V, part) -> str:
    if t == V.STRING:
        return hexs(bytes(part))
    v = part[0]
    if t in (V.FLOAT32, V.FLOAT64):
        return float(v).hex()
    if t == V.BOOL:
        return "1" if bool(v) else "0"
    return str(int(v))


def listing(path: str) -> list[str]:
    r = GGUFReader(path)
    out = []
    for f in r.fields.values():
        if f.name.startswith("GGUF."):
            continue  # the reader's own pseudo-fields (version, counts)
        key = f.name.encode().hex()
        main = f.types[0]
        if main == V.ARRAY:
            sub = f.types[-1]
            vals = [scalar_text(sub, f.parts[i]) for i in f.data]
            out.append(" ".join(["arr", key, str(int(sub)), str(len(vals))] + vals))
        else:
            out.append(f"kv {key} {int(main)} {scalar_text(main, f.parts[-1])}")
    for t in r.tensors:
        b = np.ascontiguousarray(t.data).tobytes()
        assert len(b) == t.n_bytes, (t.name, len(b), t.n_bytes)
        dims = [int(d) for d in reversed(list(t.shape))]
        out.append(" ".join(["t", t.name.encode().hex(), str(int(t.tensor_type)), str(len(dims))]
                            + [str(d) for d in dims] + [str(t.n_bytes), str(checksum(b))]))
    return out


# ---- generated files ----

SCALARS = [  # key, type, value
    ("test.u8", V.UINT8, 200), ("test.i8", V.INT8, -100), ("test.u16", V.UINT16, 60000),
    ("test.i16", V.INT16, -30000), ("test.u32", V.UINT32, 4000000000), ("test.i32", V.INT32, -2000000000),
    ("test.f32", V.FLOAT32, 1.5), ("test.bool", V.BOOL, True), ("test.string", V.STRING, "h\u00e9llo w\u00f6rld"),
    ("test.u64", V.UINT64, (1 << 63) + 5), ("test.i64", V.INT64, -(1 << 62) - 7), ("test.f64", V.FLOAT64, -0.1),
    ("test.empty_string", V.STRING, ""), ("test.bool_false", V.BOOL, False),
    ("t\u00ebst.unicode_k\u00e9y", V.UINT32, 7),
]
ARRAYS = [  # key, element type, values
    ("arr.u8", V.UINT8, [0, 1, 255]), ("arr.i8", V.INT8, [-128, 0, 127]), ("arr.u16", V.UINT16, [1, 65535]),
    ("arr.i16", V.INT16, [-32768, 32767]), ("arr.u32", V.UINT32, [4294967295, 0, 3]),
    ("arr.i32", V.INT32, [1, -2, 3, -4]), ("arr.f32", V.FLOAT32, [0.25, -1e30, 3.0]),
    ("arr.bool", V.BOOL, [True, False, True]), ("arr.u64", V.UINT64, [(1 << 64) - 1, 0]),
    ("arr.i64", V.INT64, [-(1 << 63), (1 << 63) - 1]), ("arr.f64", V.FLOAT64, [1e-300, -2.5]),
    ("arr.string", V.STRING, ["alpha", "", "\u00fc\u00f1\u00ef", "a b"]),  # gguf-py refuses empty arrays
]


def rand_blocks(rng, qt: Q, shape):
    """Random bytes for a block type gguf-py cannot quantize (only bytes are compared)."""
    rows, k = shape
    from gguf.constants import GGML_QUANT_SIZES
    be, bb = GGML_QUANT_SIZES[qt]
    return rng.integers(0, 256, size=(rows, k // be * bb), dtype=np.uint8)


def gen_types(path: str, alignment: int):
    rng = np.random.default_rng(11 + alignment)
    w = GGUFWriter(path, "wicktest")
    if alignment != 32:
        w.add_custom_alignment(alignment)
    for k, t, v in SCALARS:
        w.add_key_value(k, v, t)
    for k, t, v in ARRAYS:
        w.add_key_value(k, v, V.ARRAY, sub_type=t)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    w.add_tensor("t.f32", f(3, 5))
    w.add_tensor("t.f32_1d", f(7))
    w.add_tensor("t.f32_3d", f(2, 3, 4))
    w.add_tensor("t.f32_4d", f(2, 1, 3, 2))
    w.add_tensor("t.f16", f(4, 6).astype(np.float16))
    w.add_tensor("t.bf16", quantize(f(4, 6), Q.BF16), raw_dtype=Q.BF16)
    w.add_tensor("t.f64", rng.standard_normal((3, 3)))
    w.add_tensor("t.i8", rng.integers(-128, 127, 5, dtype=np.int8))
    w.add_tensor("t.i16", rng.integers(-30000, 30000, 5, dtype=np.int16))
    w.add_tensor("t.i32", rng.integers(-2**31, 2**31 - 1, 5, dtype=np.int32))
    w.add_tensor("t.i64", rng.integers(-2**62, 2**62, 5, dtype=np.int64))
    for qt, shape in [(Q.Q8_0, (4, 64)), (Q.Q4_0, (3, 96)), (Q.Q4_1, (2, 64)), (Q.Q5_0, (2, 32)),
                      (Q.Q5_1, (2, 64))]:
        w.add_tensor(f"t.{qt.name.lower()}", quantize(f(*shape), qt), raw_dtype=qt)
    for qt in (Q.Q2_K, Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K, Q.IQ4_NL, Q.IQ4_XS, Q.IQ2_XXS, Q.TQ2_0):
        w.add_tensor(f"t.{qt.name.lower()}", rand_blocks(rng, qt, (2, 512)), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def gen_typed_ref(path: str):
    """What tests/test_gguf.c writes with the typed adders (keep in sync)."""
    w = GGUFWriter(path, "wicktyped")
    w.add_custom_alignment(64)
    w.add_key_value("k.u8", 7, V.UINT8)
    w.add_key_value("k.i8", -7, V.INT8)
    w.add_key_value("k.u16", 700, V.UINT16)
    w.add_key_value("k.i16", -700, V.INT16)
    w.add_key_value("k.u32", 70000, V.UINT32)
    w.add_key_value("k.i32", -70000, V.INT32)
    w.add_key_value("k.f32", 0.125, V.FLOAT32)
    w.add_key_value("k.bool", True, V.BOOL)
    w.add_key_value("k.u64", 1 << 40, V.UINT64)
    w.add_key_value("k.i64", -(1 << 40), V.INT64)
    w.add_key_value("k.f64", 2.0 ** -20, V.FLOAT64)
    w.add_key_value("k.str", "wick \u2713", V.STRING)
    w.add_key_value("k.arr_i32", [1, -2, 3], V.ARRAY, sub_type=V.INT32)
    w.add_key_value("k.arr_f32", [0.5, 1.5], V.ARRAY, sub_type=V.FLOAT32)
    w.add_key_value("k.arr_bool", [False, True], V.ARRAY, sub_type=V.BOOL)
    w.add_key_value("k.arr_str", ["a", "", "\u00fc"], V.ARRAY, sub_type=V.STRING)
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    w.add_tensor("w.f32", a)
    w.add_tensor("w.transposed", np.ascontiguousarray(a.T))
    w.add_tensor("w.f16", (a / 4).astype(np.float16))
    w.add_tensor("w.i32", np.arange(5, dtype=np.int32) - 2)
    w.add_tensor("w.scalar", np.array([3.0], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main(argv):
    cmd = argv[1]
    if cmd == "gen":
        out = argv[2]
        for name, align in (("types_a32", 32), ("types_a64", 64)):
            gen_types(f"{out}/{name}.gguf", align)
            with open(f"{out}/{name}.txt", "w") as fh:
                fh.write("\n".join(listing(f"{out}/{name}.gguf")) + "\n")
        gen_typed_ref(f"{out}/typed_ref.gguf")
        return 0
    if cmd == "dump":
        with open(argv[3], "w") as fh:
            fh.write("\n".join(listing(argv[2])) + "\n")
        return 0
    if cmd == "compare":
        skip = set(argv[4:])
        a = [x for x in listing(argv[2]) if not (x.startswith("t ") and x.split()[1] in skip)]
        b = listing(argv[3])
        if a == b:
            return 0
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                print(f"line {i}:\n  {x[:200]}\n  {y[:200]}", file=sys.stderr)
                break
        print(f"{len(a)} vs {len(b)} lines differ", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
