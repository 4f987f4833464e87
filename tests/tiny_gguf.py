#!/usr/bin/env python3
"""The GGUF that llama.cpp's converter makes of a tiny model, without llama.cpp or torch.

    tiny_gguf.py INDIR OUT.gguf       INDIR: a folder written by tests/tiny_models.py

Runs at test time with the project venv's python (gguf==0.19.0 + numpy). Reads INDIR/config.json and
INDIR/model.safetensors and writes what `convert_hf_to_gguf.py --outtype f32` of llama-cpp-python
0.3.36's llama.cpp writes for that folder. Checked by hand with tools/check_tiny_gguf.py on 2026-12-06
for all nine archs: every metadata key (tokenizer included), type and value, and every tensor's name,
order, shape and bytes identical to the converter's output.

- the same metadata keys with the same values and types (u32 counts, f32 eps / rope / caps), except
  general.name / general.size_label (free text, not maths);
- the same tensors, names, shapes and f32 bytes, in the same order: the extra tensors first
  (llama3: rope_freqs.weight, the llama3 per-frequency divisors; phi3: rope_factors_long/short),
  then the checkpoint's tensors in its (sorted) order, renamed (model.layers.N.self_attn.q_proj.weight
  -> blk.N.attn_q.weight, ...), with what the converter changes:
    * llama, llama3, mistral, smollm3: the rows of attn_q / attn_k are permuted per head from HF's
      rotate-half order [x0..x(d/2-1), x(d/2)..] to interleaved pairs (x0, x(d/2)), (x1, x(d/2+1)), ...
      so GGUF llama files use pairwise RoPE ("normal" mode); qwen2/qwen3/gemma/phi3 keep HF's order
      and llama.cpp rotates them in "neox" mode;
    * gemma2, gemma3: every *norm.weight gets + 1 (GGUF stores the multiplier 1 + w);
    * phi3: qkv_proj -> attn_qkv, gate_up_proj -> ffn_up (still fused: gate rows first, then up);
    * tied models have no output.weight (llama.cpp reuses token_embd);
- the tokenizer of tiny_models.py's tokenizer.model (320 pieces, SentencePiece "llama" model), as the
  converter writes it, so llama.cpp can load the file too.

What llama.cpp 0.3.36's converter drops or hard-codes (the maths differ from transformers there;
tests/data/tiny/<arch>.llamacpp.json lists it under "dropped"):
  mistral  no sliding_window key: llama.cpp attends to the whole context
  gemma2   no query_pre_attn_scalar (llama.cpp scales by 1/sqrt(head_dim)); no rope.freq_base
           (llama.cpp uses its default 10000, transformers rope_theta)
  gemma3   no query_pre_attn_scalar; no sliding-window pattern (llama.cpp assumes every 6th layer
           global, the HF default, which tiny gemma3 follows)
  smollm3  no no_rope_layers (llama.cpp hard-codes: no RoPE on every 4th layer, as tiny smollm3)
"""
import json
import math
import os
import struct
import sys

import numpy as np

import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tiny_models  # noqa: E402  (the tokenizer pieces)

GGUF_ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2", "qwen3": "qwen3",
             "gemma2": "gemma2", "gemma3_text": "gemma3", "phi3": "phi3", "smollm3": "smollm3"}
PERMUTES = ("llama", "smollm3")  # GGUF architectures whose q/k rows the converter permutes

RENAME = [("model.embed_tokens.", "token_embd."), ("lm_head.", "output."), ("model.norm.", "output_norm."),
          ("input_layernorm.", "attn_norm."), ("self_attn.q_proj.", "attn_q."), ("self_attn.k_proj.", "attn_k."),
          ("self_attn.v_proj.", "attn_v."), ("self_attn.o_proj.", "attn_output."),
          ("self_attn.qkv_proj.", "attn_qkv."), ("self_attn.q_norm.", "attn_q_norm."),
          ("self_attn.k_norm.", "attn_k_norm."), ("pre_feedforward_layernorm.", "ffn_norm."),
          ("post_feedforward_layernorm.", "post_ffw_norm."), ("mlp.gate_proj.", "ffn_gate."),
          ("mlp.up_proj.", "ffn_up."), ("mlp.down_proj.", "ffn_down."), ("mlp.gate_up_proj.", "ffn_up.")]


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] != "F32":
            sys.exit(f"tiny_gguf.py: {name}: dtype {info['dtype']}, only F32 is expected")
        b, e = info["data_offsets"]
        out[name] = np.frombuffer(data, "<f4", (e - b) // 4, 8 + n + b).reshape(info["shape"])
    return out  # in the file's order (sorted names)


def gguf_name(hf, gemma):
    name = hf
    if name.startswith("model.layers."):
        bid, rest = name[len("model.layers."):].split(".", 1)
        if rest.startswith("post_attention_layernorm."):
            rest = rest.replace("post_attention_layernorm.", "post_attention_norm." if gemma else "ffn_norm.")
        name = f"blk.{bid}.{rest}"
    for a, b in RENAME:
        name = name.replace(a, b)
    return name


def permute(w, n_head):
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_factors(rp, dim):
    # as the converter computes them: torch float32 throughout (a python number meeting a float32
    # tensor is rounded to float32 first), then its piecewise rule per frequency
    f4 = np.float32
    freqs = f4(1.0) / (f4(rp["rope_theta"]) ** (np.arange(0, dim, 2, dtype=f4) / f4(dim)))
    factor, lo, hi = rp.get("factor", 8.0), rp.get("low_freq_factor", 1.0), rp.get("high_freq_factor", 4.0)
    old = rp.get("original_max_position_embeddings", 8192)
    out = []
    for f in freqs:
        wavelen = f4(2 * math.pi) / f
        if wavelen < old / hi:
            out.append(f4(1.0))
        elif wavelen > old / lo:
            out.append(f4(factor))
        else:
            smooth = (f4(old) / wavelen - f4(lo)) / f4(hi - lo)
            out.append(f4(1) / ((f4(1) - smooth) / f4(factor) + smooth))
    return np.array(out, dtype=f4)


def convert(indir, out_path):
    with open(os.path.join(indir, "config.json")) as f:
        c = json.load(f)
    mt = c["model_type"]
    if mt not in GGUF_ARCH:
        sys.exit(f"tiny_gguf.py: model_type {mt!r} not handled")
    arch = GGUF_ARCH[mt]
    gemma = arch in ("gemma2", "gemma3")
    rp = c.get("rope_parameters") or {}
    nh, nkv, hd = c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
    w = gguf.GGUFWriter(out_path, arch)  # writes general.architecture
    u32 = lambda k, v: w.add_uint32(f"{arch}.{k}", int(v))  # noqa: E731
    f32 = lambda k, v: w.add_float32(f"{arch}.{k}", float(v))  # noqa: E731
    w.add_string("general.type", "model")
    # llama.cpp sets token attributes by general.name ("phi3" in it: it wants "<|endoftext|>")
    w.add_string("general.name", "tiny")
    if arch == "phi3":
        scale = c["max_position_embeddings"] / rp["original_max_position_embeddings"]
        f32("rope.scaling.attn_factor",
            math.sqrt(1 + math.log(scale) / math.log(rp["original_max_position_embeddings"])) if scale > 1 else 1.0)
        u32("context_length", c["max_position_embeddings"])
        u32("rope.scaling.original_context_length", rp["original_max_position_embeddings"])
        u32("embedding_length", c["hidden_size"])
        u32("feed_forward_length", c["intermediate_size"])
        u32("block_count", c["num_hidden_layers"])
        u32("attention.head_count", nh)
        u32("attention.head_count_kv", nkv)
        f32("attention.layer_norm_rms_epsilon", c["rms_norm_eps"])
        u32("rope.dimension_count", int(rp.get("partial_rotary_factor", 1.0) * c["hidden_size"]) // nh)
        f32("rope.freq_base", rp["rope_theta"])
        w.add_uint32("general.file_type", 0)
        u32("attention.sliding_window", c.get("sliding_window") or 0)
    else:
        if arch == "gemma2":
            u32("context_length", c["max_position_embeddings"])
            u32("embedding_length", c["hidden_size"])
            u32("block_count", c["num_hidden_layers"])
        else:
            u32("block_count", c["num_hidden_layers"])
            u32("context_length", c["max_position_embeddings"])
            u32("embedding_length", c["hidden_size"])
        u32("feed_forward_length", c["intermediate_size"])
        u32("attention.head_count", nh)
        u32("attention.head_count_kv", nkv)
        if arch == "gemma3":
            f32("rope.freq_base", rp["full_attention"]["rope_theta"])
            f32("rope.freq_base_swa", rp["sliding_attention"]["rope_theta"])
        elif arch != "gemma2":  # the converter writes no rope base for Gemma 2
            f32("rope.freq_base", rp["rope_theta"])
        f32("attention.layer_norm_rms_epsilon", c["rms_norm_eps"])
        u32("attention.key_length", hd)
        u32("attention.value_length", hd)
        w.add_uint32("general.file_type", 0)
        if arch in ("llama", "smollm3"):
            u32("vocab_size", c["vocab_size"])
            u32("rope.dimension_count", hd)
        if arch == "gemma2":
            f32("attn_logit_softcapping", c["attn_logit_softcapping"])
            f32("final_logit_softcapping", c["final_logit_softcapping"])
            u32("attention.sliding_window", c["sliding_window"])
        if arch == "gemma3":
            if c.get("final_logit_softcapping"):
                f32("final_logit_softcapping", c["final_logit_softcapping"])
            u32("attention.sliding_window", c["sliding_window"])
    w.add_uint32("general.quantization_version", 2)
    # tokenizer, as the converter writes a SentencePiece model
    pieces = tiny_models.spm_pieces()
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", [p.encode() for p, _, _ in pieces])
    w.add_array("tokenizer.ggml.scores", [s for _, s, _ in pieces])
    w.add_array("tokenizer.ggml.token_type", [t for _, _, t in pieces])
    w.add_uint32("tokenizer.ggml.bos_token_id", c["bos_token_id"])
    w.add_uint32("tokenizer.ggml.eos_token_id", c["eos_token_id"])
    w.add_uint32("tokenizer.ggml.padding_token_id", c["pad_token_id"])
    if gemma:
        w.add_bool("tokenizer.ggml.add_space_prefix", False)

    if arch == "llama" and rp.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_factors(rp, hd))
    if arch == "phi3":
        w.add_tensor("rope_factors_long.weight", np.array(rp["long_factor"], dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.array(rp["short_factor"], dtype=np.float32))
    for name, t in read_safetensors(os.path.join(indir, "model.safetensors")).items():
        t = np.array(t, dtype=np.float32)
        if arch in PERMUTES and name.endswith(("q_proj.weight", "q_proj.bias")):
            t = permute(t, nh)
        if arch in PERMUTES and name.endswith(("k_proj.weight", "k_proj.bias")):
            t = permute(t, nkv)
        if gemma and name.endswith("norm.weight"):
            t = (t + np.float32(1)).astype(np.float32)
        w.add_tensor(gguf_name(name, gemma), t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    convert(sys.argv[1], sys.argv[2])
