"""gguf-py's quantize / dequantize on random data, for tests/test_quant_oracle.c.

Run by the project venv's python (gguf==0.19.0, numpy): `quant_ref.py OUTDIR`.
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
    cases.append(("threads", rng.standard_normal((48, 2048))))  # > 64 Ki elements: the pool
    return [(n, a.astype(np.float32)) for n, a in cases]


def dequant_sets(out, name, qtype, qbytes):
    dq = quants.dequantize(qbytes, qtype).astype(np.float32)
    write(out, name + ".dq", dq)
    write(out, name + ".dq16", dq.astype(np.float16))
    write(out, name + ".dqb16", bf16_bits(dq))


def main():
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
