"""Make an HF-style Llama directory from a GGUF file, with gguf-py and numpy
only (no torch), as ../shared/reference/models.md describes:

  make_hf_dir.py GGUF OUTDIR

writes OUTDIR/model.safetensors (every tensor dequantized to f32, HF names,
the attn_q / attn_k row permutation of llama.cpp's converter undone so the
checkpoint uses rotate-half RoPE), OUTDIR/config.json (from the llama.*
metadata), OUTDIR/tokenizer_config.json (the chat template) and, when
tests/make_tokenizer_json.py exists, OUTDIR/tokenizer.json. Run with the
project venv (gguf==0.19.0, safetensors==0.8.0). The output is written to
OUTDIR.tmp and renamed, so a half-written directory is never used; a
directory already made from the same file (OUTDIR/source.txt) is kept.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
from gguf import GGUFReader, GGMLQuantizationType as Q
from gguf.quants import dequantize
from safetensors.numpy import save_file


def field(r, key, default=None):
    f = r.fields.get(key)
    if f is None:
        return default
    v = f.parts[f.data[0]]
    if f.types and f.types[0].name == "STRING":
        return bytes(v).decode("utf-8")
    return v.tolist()[0]


def unpermute(w, n_head):
    """Inverse of llama.cpp's convert_hf_to_gguf permute(): rows (h, 2, D/2)
    were stored as (h, D/2, 2)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def to_f32(t):
    if t.tensor_type == Q.F32:
        a = np.array(t.data, dtype=np.float32)
    else:
        a = dequantize(t.data, t.tensor_type).astype(np.float32)
    return a.reshape([int(d) for d in reversed(t.shape)])


def main():
    src, out = sys.argv[1], sys.argv[2]
    # the directory is 538 MB and deterministic: made once per source file
    stamp = f"{os.path.abspath(src)} {os.path.getsize(src)} {os.path.getmtime(src)} v2"
    try:
        with open(os.path.join(out, "source.txt")) as f:
            if f.read() == stamp:
                return
    except OSError:
        pass
    r = GGUFReader(src)
    arch = field(r, "general.architecture")
    assert arch == "llama", arch
    g = lambda k, d=None: field(r, f"{arch}.{k}", d)
    n_head, n_kv = g("attention.head_count"), g("attention.head_count_kv")
    dim = g("embedding_length")
    names = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
                 "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
                 "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                 "ffn_down": "mlp.down_proj"}
    tensors = {}
    vocab = None
    for t in r.tensors:
        a = to_f32(t)
        name = t.name
        if name in names:
            hf = names[name]
        elif name.startswith("blk."):
            _, l, kind, _w = name.split(".")
            hf = f"model.layers.{l}.{per_layer[kind]}.weight"
            if kind == "attn_q":
                a = unpermute(a, n_head)
            elif kind == "attn_k":
                a = unpermute(a, n_kv)
        else:
            raise SystemExit(f"unexpected tensor {name}")
        if name == "token_embd.weight":
            vocab = a.shape[0]
        tensors[hf] = np.ascontiguousarray(a)
    tied = "lm_head.weight" not in tensors
    cfg = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": vocab, "hidden_size": dim,
        "intermediate_size": g("feed_forward_length"), "num_hidden_layers": g("block_count"),
        "num_attention_heads": n_head, "num_key_value_heads": n_kv, "head_dim": dim // n_head,
        "max_position_embeddings": g("context_length"), "rope_theta": float(g("rope.freq_base", 10000.0)),
        "rms_norm_eps": float(g("attention.layer_norm_rms_epsilon")), "rope_scaling": None,
        "tie_word_embeddings": tied, "bos_token_id": field(r, "tokenizer.ggml.bos_token_id"),
        "eos_token_id": field(r, "tokenizer.ggml.eos_token_id"), "torch_dtype": "float32",
    }
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    save_file(tensors, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(tmp, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    tmpl = field(r, "tokenizer.chat_template")
    with open(os.path.join(tmp, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": tmpl} if tmpl else {}, f, indent=2)
    tok = os.path.join(os.path.dirname(os.path.abspath(__file__)), "make_tokenizer_json.py")
    if os.path.exists(tok):
        subprocess.run([sys.executable, tok, src, os.path.join(tmp, "tokenizer.json")], check=True)
    with open(os.path.join(tmp, "source.txt"), "w") as f:
        f.write(stamp)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
