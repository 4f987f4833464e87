#!/usr/bin/env python3
"""`wick quantize --imatrix` end to end on a tiny GGUF, checked with gguf-py.

    cli_imatrix_check.py WICK TMPDIR       (the project venv's python: gguf 0.19.0 + numpy)

1. tests/tiny_models.py + tests/tiny_gguf.py make the tiny llama3 GGUF (rows of 64 columns: q4_K falls
   back to q5_0, which uses the matrix too; the q6_K output projection uses it as well);
2. an importance matrix for every 2-D weight but the ffn_down ones, written twice with the same
   weights: llama.cpp's GGUF form (NAME.in_sum2 / NAME.counts, imatrix.* keys) and the legacy .dat;
3. `wick quantize IN OUT q4_K` without and with each matrix. Checked: both forms give the same
   tensors; tensors without an entry are the plain run's bytes; the others differ and have a lower
   importance-weighted error than the plain run (what the matrix is for); quantize.imatrix.* keys;
   a matrix whose entry does not fit its tensor is an error (exit status 1, the tensor named).
Bytes equal to llama.cpp's are tests/test_quant_imatrix.c's part (ggml's hashes).
"""
import os
import struct
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGUFWriter
from gguf.quants import dequantize

here = os.path.dirname(os.path.abspath(__file__))
wick, tmp = sys.argv[1], sys.argv[2]
os.makedirs(tmp, exist_ok=True)
hf, src = os.path.join(tmp, "hf"), os.path.join(tmp, "tiny.gguf")
subprocess.run(["/usr/bin/python3", os.path.join(here, "tiny_models.py"), "llama3", hf], check=True,
               stdout=subprocess.DEVNULL)
subprocess.run([sys.executable, os.path.join(here, "tiny_gguf.py"), hf, src], check=True, stdout=subprocess.DEVNULL)

ref = GGUFReader(src)
weights = {t.name: np.array(t.data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])
           for t in ref.tensors if len(t.shape) == 2 and t.name.endswith(".weight")}
rng = np.random.default_rng(23)
NCALL = 4
entries = {}
for name, w in weights.items():
    if "ffn_down" in name:
        continue
    cols = w.shape[-1]
    v = (rng.standard_normal(cols) ** 2 + 0.01).astype(np.float32)
    v[rng.random(cols) < 0.1] *= 50  # a few heavy columns
    entries[name] = (v * NCALL).astype(np.float32)  # the files hold sums over NCALL calls
assert entries and len(entries) < len(weights)

im_gguf = os.path.join(tmp, "imatrix.gguf")
gw = GGUFWriter(im_gguf, "imatrix")
gw.add_array("imatrix.datasets", ["calibration.txt"])
gw.add_uint32("imatrix.chunk_count", 3)
gw.add_uint32("imatrix.chunk_size", 512)
for name, s in entries.items():
    gw.add_tensor(name + ".in_sum2", s.reshape(1, -1))
    gw.add_tensor(name + ".counts", np.array([[NCALL]], dtype=np.float32))
gw.write_header_to_file()
gw.write_kv_data_to_file()
gw.write_tensors_to_file()
gw.close()

im_dat = os.path.join(tmp, "imatrix.dat")
with open(im_dat, "wb") as f:
    f.write(struct.pack("<i", len(entries)))
    for name, s in entries.items():
        b = name.encode()
        f.write(struct.pack("<i", len(b)) + b + struct.pack("<ii", NCALL, s.size) + s.tobytes())
    f.write(struct.pack("<i", 3) + struct.pack("<i", 15) + b"calibration.txt")


def quantize(out, *extra):
    r = subprocess.run([wick, "quantize", *extra, src, out, "q4_K"], capture_output=True, text=True)
    return r.returncode, r.stderr


def tensors(path):
    return {t.name: t for t in GGUFReader(path).tensors}


plain, with_g, with_d = (os.path.join(tmp, n) for n in ("plain.gguf", "imx_gguf.gguf", "imx_dat.gguf"))
rc, err = quantize(plain)
assert rc == 0, err
rc, err = quantize(with_g, "--imatrix", im_gguf)
assert rc == 0, err
n_missing = sum(1 for n in weights if n not in entries)
assert f"used for {len(entries)} tensors, {n_missing} quantized without one" in err, err
rc, err = quantize(with_d, "--imatrix", im_dat)
assert rc == 0, err

tp, tg, td = tensors(plain), tensors(with_g), tensors(with_d)
n_better = 0
for name, t in tg.items():
    assert np.array_equal(np.array(t.data), np.array(td[name].data)), f"{name}: GGUF and .dat matrices differ"
    same = np.array_equal(np.array(t.data), np.array(tp[name].data))
    if name not in entries or t.tensor_type.name in ("Q8_0", "F32", "F16"):  # no matrix, or nothing to weigh
        assert same, f"{name}: no entry, yet its bytes changed"
        n_better += 1
        continue
    assert not same, f"{name}: the matrix changed nothing ({t.tensor_type.name})"
    x = weights[name]
    imp = entries[name] / NCALL
    err = {}
    for label, tt in (("plain", tp[name]), ("imatrix", t)):
        y = dequantize(tt.data, tt.tensor_type).reshape(x.shape)
        err[label] = float(((x - y) ** 2 * imp).sum())
    assert err["imatrix"] < err["plain"], f"{name}: weighted error {err}"
    n_better += 1
assert n_better == len(tg)

kv = GGUFReader(with_g).fields
assert bytes(kv["quantize.imatrix.file"].parts[-1]).decode() == im_gguf
assert bytes(kv["quantize.imatrix.dataset"].parts[-1]).decode() == "calibration.txt"
assert int(kv["quantize.imatrix.entries_count"].parts[-1][0]) == len(entries)
assert int(kv["quantize.imatrix.chunks_count"].parts[-1][0]) == 3

# an entry that does not fit its tensor (not the token embedding): refused
bad = os.path.join(tmp, "bad.dat")
victim = next(n for n in entries if "attn_q" in n)
with open(bad, "wb") as f:
    f.write(struct.pack("<i", 1))
    b = victim.encode()
    f.write(struct.pack("<i", len(b)) + b + struct.pack("<ii", 1, 7) + np.ones(7, np.float32).tobytes())
rc, err = quantize(os.path.join(tmp, "bad.gguf"), "--imatrix", bad)
assert rc != 0 and victim in err, (rc, err)
rc, err = quantize(os.path.join(tmp, "bad.gguf"), "--imatrix", os.path.join(tmp, "missing.dat"))
assert rc != 0 and "missing.dat" in err, (rc, err)
print(f"ok: {len(entries)} tensors with an entry (closer in weighted error where the type uses it), "
      f"{n_missing} without (bytes unchanged); GGUF and .dat forms agree")
