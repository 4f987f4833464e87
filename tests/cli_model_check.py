"""`wick inspect` and `wick quantize` on the real SmolLM2 GGUF, checked with
gguf-py (run by the project venv's python; see tests/CMakeLists.txt).

usage: cli_model_check.py WICK_BINARY MODEL.gguf WORKDIR

1. inspect lists all 272 tensors with their dtypes and the metadata.
2. quantize to f32 (dequantizes everything), then that f32 file back to q4_1:
   every tensor is byte-identical to the package file (its weights are
   q4_1-precision values, token_embd q8_0 through llama.cpp's output rule).
3. quantize to q4_K: the types follow llama.cpp's rules (rows of 576 are not
   whole 256-blocks -> q5_0; 1536 -> q4_K; tied token_embd -> q6_K -> q8_0;
   1-D stays f32), and gguf-py dequantizes the result close to the original.
4. bad arguments and a hostile input exit non-zero with a message.
"""
import os
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as T
from gguf.quants import dequantize

wick, model, work = sys.argv[1:4]
os.makedirs(work, exist_ok=True)
fails = []


def check(cond, what):
    if not cond:
        fails.append(what)
        print("FAIL:", what)


def run(*args, expect=0):
    p = subprocess.run([wick, *args], capture_output=True, text=True)
    check(p.returncode == expect, f"wick {' '.join(args)} exited {p.returncode}, want {expect}: {p.stderr[-400:]}")
    return p


ref = GGUFReader(model)
ref_t = {t.name: t for t in ref.tensors}

out = run("inspect", model).stdout
check("272 tensors" in out, "inspect reports 272 tensors")
check("llama.block_count" in out and "tokenizer.ggml.tokens" in out, "inspect lists metadata")
for name in ("token_embd.weight", "blk.29.ffn_down.weight", "output_norm.weight"):
    check(name in out, f"inspect lists {name}")
check(" q8_0 " in out and " q4_1 " in out, "inspect names ggml dtypes")

f32 = os.path.join(work, "smollm2-f32.gguf")
q41 = os.path.join(work, "smollm2-q4_1.gguf")
q4k = os.path.join(work, "smollm2-q4_K.gguf")
run("quantize", model, f32, "F32")
r32 = GGUFReader(f32)
check(len(r32.tensors) == 272, "f32 file has 272 tensors")
check(all(t.tensor_type == T.F32 for t in r32.tensors), "f32 file is all f32")
for t in r32.tensors:
    want = dequantize(ref_t[t.name].data, ref_t[t.name].tensor_type).reshape(-1)
    check(np.array_equal(np.asarray(t.data).reshape(-1), want), f"f32 {t.name} equals gguf-py's dequantization")

run("quantize", f32, q41, "q4_1")
r41 = GGUFReader(q41)
same = 0
for t in r41.tensors:
    o = ref_t[t.name]
    if t.tensor_type == o.tensor_type and np.array_equal(np.asarray(t.data).view(np.uint8).reshape(-1),
                                                         np.asarray(o.data).view(np.uint8).reshape(-1)):
        same += 1
    else:
        check(False, f"q4_1 round trip: {t.name} {t.tensor_type.name} vs {o.tensor_type.name} differs")
check(same == 272, f"q4_1 round trip byte-identical ({same}/272)")
check(r41.fields["general.file_type"].contents() == 3, "general.file_type = 3 (MOSTLY_Q4_1)")

run("quantize", f32, q4k, "Q4_K")
rk = {t.name: t for t in GGUFReader(q4k).tensors}
check(rk["blk.0.ffn_down.weight"].tensor_type == T.Q4_K, "ffn_down (rows 1536) is q4_K")
check(rk["blk.0.attn_q.weight"].tensor_type == T.Q5_0, "attn_q (rows 576) falls back to q5_0")
check(rk["token_embd.weight"].tensor_type == T.Q8_0, "tied token_embd -> q6_K -> q8_0")
check(rk["blk.0.attn_norm.weight"].tensor_type == T.F32, "norms stay f32")
for name in ("blk.0.ffn_down.weight", "blk.3.attn_q.weight"):
    got = dequantize(rk[name].data, rk[name].tensor_type).reshape(-1)
    want = dequantize(ref_t[name].data, ref_t[name].tensor_type).reshape(-1)
    err = np.sqrt(np.mean((got - want) ** 2)) / (np.sqrt(np.mean(want ** 2)) + 1e-30)
    check(err < 0.08, f"{name} q4_K relative rms error {err:.4f} < 0.08")

# an HF-style safetensors directory in: names kept, 2-D weights quantized
from safetensors.numpy import save_file
hf = os.path.join(work, "hf")
os.makedirs(hf, exist_ok=True)
rng = np.random.default_rng(5)
w = rng.standard_normal((64, 96)).astype(np.float32)
emb = rng.standard_normal((100, 64)).astype(np.float32)
save_file({"model.layers.0.mlp.up_proj.weight": w, "model.norm.weight": np.ones(64, np.float32),
           "model.embed_tokens.weight": emb, "model.pos_ids": np.arange(8, dtype=np.int64)},
          os.path.join(hf, "model.safetensors"), metadata={"format": "pt"})
hq = os.path.join(work, "hf-q8_0.gguf")
run("quantize", hf, hq, "q8_0")
rh = {t.name: t for t in GGUFReader(hq).tensors}
check(rh["model.layers.0.mlp.up_proj.weight"].tensor_type == T.Q8_0, "safetensors weight -> q8_0")
check(rh["model.norm.weight"].tensor_type == T.F32, "safetensors norm stays f32")
check(rh["model.pos_ids"].tensor_type == T.I64, "safetensors i64 copied")
got = dequantize(rh["model.layers.0.mlp.up_proj.weight"].data, T.Q8_0).reshape(w.shape)
from gguf.quants import quantize
check(np.array_equal(got, dequantize(quantize(w, T.Q8_0), T.Q8_0)), "q8_0 of safetensors weight equals gguf-py's")
inspect = run("inspect", hf).stdout
check("model.embed_tokens.weight" in inspect and "F32" in inspect and "I64" in inspect, "inspect a safetensors dir")

run("quantize", model, os.path.join(work, "x.gguf"), "q9_9", expect=2)
run("quantize", model, expect=2)
bad = os.path.join(work, "bad.gguf")
with open(model, "rb") as f:
    head = f.read(100000)
with open(bad, "wb") as f:
    f.write(head)  # truncated: the tensor data is missing
p = run("inspect", bad, expect=1)
check("wick inspect:" in p.stderr, "truncated file: a message, not a crash")
run("quantize", bad, os.path.join(work, "y.gguf"), "q8_0", expect=1)
run("inspect", "/nonexistent.gguf", expect=1)

print("cli_model_check:", "FAILED" if fails else "ok", f"({len(fails)} failures)")
sys.exit(1 if fails else 0)
