"""gguf-py's quantize / dequantize on random data, for tests/test_quant_oracle.c.

Run by the project venv's python (gguf==0.19.0, numpy): `quant_ref.py OUTDIR`
(random data, below) or `quant_ref.py --model GGUF OUTFILE` (a real model's
tensors: see model()).
Writes raw little-endian files and OUTDIR/manifest.txt, one case a line:
  q NAME ROWS COLS TYPE   NAME.f32 / .f16 / .bf16 (the inputs: f32 values and
                          their f16 / bf16 bit patterns), NAME.TYPE.q (gguf-py
                          quantize of the f32 values), .q16 / .qb16 (of the
                          f16 / bf16 values), NAME.TYPE.dq* (gguf-py's
                          dequantize of .q: f32, and rounded to f16 / bf16)
  d NAME ROWS COLS TYPE   NAME.q random block bytes, NAME.dq / .dq16 / .dqb16
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

QUANT_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"]
DEQUANT_TYPES = QUANT_TYPES + ["Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"]


def bf16_bits(x):
    return quants.quantize(x.astype(np.float32), T.BF16).view(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write(out, name, arr):
    np.ascontiguousarray(arr).tofile(os.path.join(out, name))


def inputs(rng):
    """(name, f32 array) cases: shapes from one block to several threads' work."""
    cases = []
    cases.append(("one_block", rng.standard_normal((1, 32))))
    cases.append(("small", rng.standard_normal((3, 64)) * 2.5))
    x = rng.standard_normal((5, 256))
    x[rng.random(x.shape) < 0.02] *= 200.0  # outliers
    cases.append(("outliers", x))
    x = rng.standard_normal((6, 96))
    x[1] = 0.0  # a row of zeros
    x[2] = 0.37  # all equal, positive
    x[3] = -1.25  # all equal, negative
    x[4, :32] = 0.0  # one zero block in a live row
    x[5] *= 1e-6  # tiny: subnormal f16 scales
    cases.append(("special", x))
    cases.append(("large", rng.standard_normal((4, 128)) * 3e3))
    cases.append(("uniform", rng.uniform(-1, 1, (2, 512))))
    x = rng.integers(-126, 126, (2, 64)) + 0.5
    x[:, ::32] = 127.0  # q8_0 scale 1: every value a rounding tie (away from zero)
    x[1] = np.where(np.arange(64) % 3 == 0, 0.49999997, x[1])
    cases.append(("ties", x))
    cases.append(("threads", rng.standard_normal((48, 2048))))  # > 64 Ki elements: the pool
    return [(n, a.astype(np.float32)) for n, a in cases]


def dequant_sets(out, name, qtype, qbytes):
    dq = quants.dequantize(qbytes, qtype).astype(np.float32)
    write(out, name + ".dq", dq)
    write(out, name + ".dq16", dq.astype(np.float16))
    write(out, name + ".dqb16", bf16_bits(dq))


def checksums(a):
    """Two position-sensitive sums (uint64, wrapping) of an array's bit patterns."""
    u = a.reshape(-1).view(np.uint32 if a.dtype.itemsize == 4 else np.uint8).astype(np.uint64)
    w = np.arange(u.size, dtype=np.uint64) % np.uint64(65521) + np.uint64(1)
    return int(u.sum(dtype=np.uint64)), int((u * w).sum(dtype=np.uint64))


def model(path, out):
    """Every quantized tensor of a GGUF: where its bytes are and checksums of
    gguf-py's dequantization; of its first rows (<= 64), checksums of
    gguf-py's quantization of those dequantized values to each QUANT_TYPE.
      t NAME TYPE ROWS COLS OFFSET NBYTES S1 S2 QROWS [QTYPE S1 S2]..."""
    np.seterr(all="ignore")
    r = gguf.GGUFReader(path)
    lines = []
    for t in r.tensors:
        qt = t.tensor_type
        if qt not in quants._type_traits or qt == T.BF16:
            continue
        cols = int(t.shape[0])
        rows = int(np.prod(t.shape[1:])) if len(t.shape) > 1 else 1
        dq = quants.dequantize(t.data, qt).astype(np.float32).reshape(rows, cols)
        s1, s2 = checksums(dq)
        qrows = min(rows, 64)
        parts = [f"t {t.name} {qt.name.lower()} {rows} {cols} {t.data_offset} {t.n_bytes} {s1} {s2} {qrows}"]
        for tn in QUANT_TYPES:
            a, b = checksums(quants.quantize(dq[:qrows], T[tn]))
            parts.append(f"{tn.lower()} {a} {b}")
        lines.append(" ".join(parts))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    if sys.argv[1] == "--model":
        model(sys.argv[2], sys.argv[3])
        return
    out = sys.argv[1]
    np.seterr(all="ignore")  # random block bytes hold inf / NaN scales
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261201)
    lines = []
    for name, x in inputs(rng):
        rows, cols = x.shape
        write(out, name + ".f32", x)
        x16 = x.astype(np.float16)
        write(out, name + ".f16", x16)
        b16 = bf16_bits(x)
        write(out, name + ".bf16", b16)
        for tn in QUANT_TYPES:
            qt = T[tn]
            stem = f"{name}.{tn.lower()}"
            q = quants.quantize(x, qt)
            write(out, stem + ".q", q)
            write(out, stem + ".q16", quants.quantize(x16.astype(np.float32), qt))
            write(out, stem + ".qb16", quants.quantize(bf16_values(b16), qt))
            dequant_sets(out, stem, qt, q)
            lines.append(f"q {name} {rows} {cols} {tn.lower()}")
    for tn in DEQUANT_TYPES:
        qt = T[tn]
        bs, ts = gguf.GGML_QUANT_SIZES[qt]
        rows, nblk = 5, 3
        raw = rng.integers(0, 256, size=(rows, nblk * ts), dtype=np.uint8)
        name = f"rnd_{tn.lower()}"
        write(out, name + ".q", raw)
        dequant_sets(out, name, qt, raw)
        lines.append(f"d {name} {rows} {nblk * bs} {tn.lower()}")
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
