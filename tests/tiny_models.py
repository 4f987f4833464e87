#!/usr/bin/env python3
"""Tiny random-weight HF checkpoints, one per architecture wick's model floor must run.

    tiny_models.py ARCH OUTDIR      ARCH in: llama llama3 mistral qwen2 qwen3 gemma2 gemma3 phi3 smollm3
    tiny_models.py ARCH OUTDIR --kv-heads N   the same family with N KV heads (each with its
                                    query group; the weights drawn for those shapes): tensor-parallel tests
    tiny_models.py --list           print the ARCH names

Runs at test time with Debian's /usr/bin/python3 + numpy (no torch, no transformers). Writes:

  OUTDIR/config.json        the HF config exactly as transformers 5.24.0's save_pretrained writes it
                            for that model_type (CONFIGS below were produced by transformers itself;
                            tools/make_tiny_refs.py checks the round trip). Keys sorted, indent 2.
  OUTDIR/model.safetensors  every tensor float32 ("F32"), little-endian, C order, HF names
                            (model.layers.N.self_attn.q_proj.weight, ...), shapes as PyTorch's
                            [out, in]; header keys sorted, "__metadata__": {"format": "pt"}, header
                            padded with spaces to a multiple of 8, data in the same sorted order.
                            Tied models (tie_word_embeddings) have no lm_head.weight.
  OUTDIR/tokenizer.model    a SentencePiece BPE model (protobuf) of 320 pieces: 0 <unk>, 1 <s>,
                            2 </s>, 3..258 the byte pieces <0x00>..<0xFF>, 259..319 "▁", letters and
                            a few pairs. Only llama.cpp's converter needs it (the tests feed ids).

Weights: numpy.random.default_rng(SEEDS[arch]) (PCG64, stable across numpy versions), drawn in the
order of tensor_specs(); normal(mean, std) per tensor (STD below): untied embeddings and lm_head 0.3,
tied embeddings 0.1, Gemma embeddings 0.05 (they are multiplied by sqrt(64)), q/k/v/gate/up
projections 0.08 (gemma2's q/k 0.25, so that attn_logit_softcapping 5.0 bites), o_proj and down_proj
1.0 (the layers then outweigh the token's own embedding: with small ones a tied model only ever
repeats its last token), biases 0.1, RMSNorm weights 1 + 0.1 N (Gemma's norms, which compute
x * (1 + w): 0.1 N). Logits come out O(1) (std 0.4 to 2.5), nothing saturates.
Deterministic: the same bytes on every run and machine.

What each model switches on (sequence for the references: 24 ids, so the windows of 8 bite):
  llama    llama 2 style, untied, rope_theta 50000
  llama3   tied, rope_type llama3 (factor 8, low 1, high 4, original_max_position_embeddings 64 — one
           frequency in the smooth band, the rest scaled), rope_theta 500000
  mistral  untied, sliding_window 8, rope_theta 20000
  qwen2    tied, q/k/v biases, rope_theta 1e6
  qwen3    tied, q_norm/k_norm per head, head_dim 32 (!= hidden/heads = 16), rope_theta 1e6
  gemma2   tied, head_dim 32, (1+w) norms, pre+post norms, GELU-tanh, embeddings * sqrt(64),
           sliding_window 8 on layer 0 (sliding/full alternate), query_pre_attn_scalar 24 (!= 32),
           attn_logit_softcapping 5.0, final_logit_softcapping 3.0
  gemma3   gemma3_text, tied, 6 layers (5 sliding then 1 full: the default pattern 6, the one
           llama.cpp assumes), 4 q / 1 kv heads, head_dim 32, q/k norms, sliding_window 8,
           rope_theta 1e6 global / 10000 local, query_pre_attn_scalar 24, no soft-capping
  phi3     untied, fused qkv_proj and gate_up_proj, partial_rotary_factor 0.5 (8 of 16 dims rotate),
           longrope: short_factor / long_factor (4 each), original_max_position_embeddings 16 <
           max_position_embeddings 64
  smollm3  tied, 4 layers, no_rope_layers [1, 1, 1, 0] (layer 3 has no RoPE), rope_theta 150000
All: vocab 320, hidden 64, intermediate 128, 4 q heads / 2 kv heads (gemma3: 1), head_dim 16 unless
said, rms_norm_eps 1e-5, bos 1, eos 2, pad 0.
"""
import json
import os
import struct
import sys

import numpy as np

ARCHS = ["llama", "llama3", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "phi3", "smollm3"]
SEEDS = {a: 2200 + i for i, a in enumerate(ARCHS)}

# Made by transformers 5.24.0 (XxxConfig(...).save_pretrained, "architectures" set); do not edit
# by hand: tools/make_tiny_refs.py fails when a config no longer round-trips.
CONFIGS = json.loads(r"""
{
 "gemma2": {
  "architectures": [
   "Gemma2ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "attn_logit_softcapping": 5.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "final_logit_softcapping": 3.0,
  "head_dim": 32,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "layer_types": [
   "sliding_attention",
   "full_attention"
  ],
  "max_position_embeddings": 128,
  "model_type": "gemma2",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "query_pre_attn_scalar": 24,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 20000.0,
   "rope_type": "default"
  },
  "sliding_window": 8,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_bidirectional_attention": null,
  "use_cache": true,
  "vocab_size": 320
 },
 "gemma3": {
  "_sliding_window_pattern": 6,
  "architectures": [
   "Gemma3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "attn_logit_softcapping": null,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "final_logit_softcapping": null,
  "head_dim": 32,
  "hidden_activation": "gelu_pytorch_tanh",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "layer_types": [
   "sliding_attention",
   "sliding_attention",
   "sliding_attention",
   "sliding_attention",
   "sliding_attention",
   "full_attention"
  ],
  "max_position_embeddings": 128,
  "model_type": "gemma3_text",
  "num_attention_heads": 4,
  "num_hidden_layers": 6,
  "num_key_value_heads": 1,
  "pad_token_id": 0,
  "query_pre_attn_scalar": 24,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "full_attention": {
    "rope_theta": 1000000.0,
    "rope_type": "default"
   },
   "sliding_attention": {
    "rope_theta": 10000.0,
    "rope_type": "default"
   }
  },
  "sliding_window": 8,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_bidirectional_attention": false,
  "use_cache": true,
  "vocab_size": 320
 },
 "llama": {
  "architectures": [
   "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "max_position_embeddings": 128,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 50000.0,
   "rope_type": "default"
  },
  "tie_word_embeddings": false,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "vocab_size": 320
 },
 "llama3": {
  "architectures": [
   "LlamaForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "max_position_embeddings": 256,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "factor": 8.0,
   "high_freq_factor": 4.0,
   "low_freq_factor": 1.0,
   "original_max_position_embeddings": 64,
   "rope_theta": 500000.0,
   "rope_type": "llama3"
  },
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "vocab_size": 320
 },
 "mistral": {
  "architectures": [
   "MistralForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "max_position_embeddings": 128,
  "model_type": "mistral",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 20000.0,
   "rope_type": "default"
  },
  "sliding_window": 8,
  "tie_word_embeddings": false,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "vocab_size": 320
 },
 "phi3": {
  "architectures": [
   "Phi3ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "embd_pdrop": 0.0,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "max_position_embeddings": 64,
  "model_type": "phi3",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "original_max_position_embeddings": 16,
  "pad_token_id": 0,
  "resid_pdrop": 0.0,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "long_factor": [
    1.0,
    1.5,
    2.5,
    4.0
   ],
   "original_max_position_embeddings": 16,
   "partial_rotary_factor": 0.5,
   "rope_theta": 10000.0,
   "rope_type": "longrope",
   "short_factor": [
    1.0,
    1.1,
    1.3,
    1.6
   ]
  },
  "sliding_window": null,
  "tie_word_embeddings": false,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "vocab_size": 320
 },
 "qwen2": {
  "architectures": [
   "Qwen2ForCausalLM"
  ],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "layer_types": [
   "full_attention",
   "full_attention"
  ],
  "max_position_embeddings": 128,
  "max_window_layers": 28,
  "model_type": "qwen2",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 1000000.0,
   "rope_type": "default"
  },
  "sliding_window": null,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 320
 },
 "qwen3": {
  "architectures": [
   "Qwen3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 32,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "layer_types": [
   "full_attention",
   "full_attention"
  ],
  "max_position_embeddings": 128,
  "max_window_layers": 28,
  "model_type": "qwen3",
  "num_attention_heads": 4,
  "num_hidden_layers": 2,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 1000000.0,
   "rope_type": "default"
  },
  "sliding_window": null,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 320
 },
 "smollm3": {
  "architectures": [
   "SmolLM3ForCausalLM"
  ],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "head_dim": 16,
  "hidden_act": "silu",
  "hidden_size": 64,
  "initializer_range": 0.02,
  "intermediate_size": 128,
  "layer_types": [
   "full_attention",
   "full_attention",
   "full_attention",
   "full_attention"
  ],
  "max_position_embeddings": 128,
  "mlp_bias": false,
  "model_type": "smollm3",
  "no_rope_layer_interval": 4,
  "no_rope_layers": [
   1,
   1,
   1,
   0
  ],
  "num_attention_heads": 4,
  "num_hidden_layers": 4,
  "num_key_value_heads": 2,
  "pad_token_id": 0,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {
   "rope_theta": 150000.0,
   "rope_type": "default"
  },
  "sliding_window": null,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 320
 }
}
""")


# standard deviations of the weights (see the header)
STD = {"emb": 0.3, "tied_emb": 0.1, "gemma_emb": 0.05, "proj": 0.08, "gemma2_qk": 0.25, "out": 1.0}


def is_gemma(arch):
    return arch in ("gemma2", "gemma3")


def tensor_specs(arch):
    """[(name, shape, mean, std)] in the order the weights are drawn."""
    c = CONFIGS[arch]
    h, inter, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    hd, nq, nkv = c["head_dim"], c["num_attention_heads"], c["num_key_value_heads"]
    norm_mean = 0.0 if is_gemma(arch) else 1.0
    proj, qk, out = STD["proj"], (STD["gemma2_qk"] if arch == "gemma2" else STD["proj"]), STD["out"]
    emb = STD["gemma_emb"] if is_gemma(arch) else STD["tied_emb"] if c["tie_word_embeddings"] else STD["emb"]
    s = [("model.embed_tokens.weight", [v, h], 0.0, emb)]
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        s.append((p + "input_layernorm.weight", [h], norm_mean, 0.1))
        if arch == "phi3":
            s.append((p + "self_attn.qkv_proj.weight", [(nq + 2 * nkv) * hd, h], 0.0, proj))
        else:
            s.append((p + "self_attn.q_proj.weight", [nq * hd, h], 0.0, qk))
            s.append((p + "self_attn.k_proj.weight", [nkv * hd, h], 0.0, qk))
            s.append((p + "self_attn.v_proj.weight", [nkv * hd, h], 0.0, proj))
        if arch == "qwen2":
            s.append((p + "self_attn.q_proj.bias", [nq * hd], 0.0, 0.1))
            s.append((p + "self_attn.k_proj.bias", [nkv * hd], 0.0, 0.1))
            s.append((p + "self_attn.v_proj.bias", [nkv * hd], 0.0, 0.1))
        if arch in ("qwen3", "gemma3"):
            s.append((p + "self_attn.q_norm.weight", [hd], norm_mean, 0.1))
            s.append((p + "self_attn.k_norm.weight", [hd], norm_mean, 0.1))
        s.append((p + "self_attn.o_proj.weight", [h, nq * hd], 0.0, out))
        s.append((p + "post_attention_layernorm.weight", [h], norm_mean, 0.1))
        if is_gemma(arch):
            s.append((p + "pre_feedforward_layernorm.weight", [h], norm_mean, 0.1))
            s.append((p + "post_feedforward_layernorm.weight", [h], norm_mean, 0.1))
        if arch == "phi3":
            s.append((p + "mlp.gate_up_proj.weight", [2 * inter, h], 0.0, proj))
        else:
            s.append((p + "mlp.gate_proj.weight", [inter, h], 0.0, proj))
            s.append((p + "mlp.up_proj.weight", [inter, h], 0.0, proj))
        s.append((p + "mlp.down_proj.weight", [h, inter], 0.0, out))
    s.append(("model.norm.weight", [h], norm_mean, 0.1))
    if not c["tie_word_embeddings"]:
        s.append(("lm_head.weight", [v, h], 0.0, STD["emb"]))
    return s


def make_tensors(arch):
    rng = np.random.default_rng(SEEDS[arch])
    out = {}
    for name, shape, mean, std in tensor_specs(arch):
        out[name] = (mean + std * rng.standard_normal(shape)).astype("<f4")
    return out


def safetensors_bytes(tensors):
    names = sorted(tensors)
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for n in names:
        t = tensors[n]
        header[n] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + t.nbytes]}
        off += t.nbytes
    hj = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    hj += b" " * (-len(hj) % 8)
    return struct.pack("<Q", len(hj)) + hj + b"".join(np.ascontiguousarray(tensors[n]).tobytes() for n in names)


# --- a SentencePiece model written as protobuf by hand (field numbers from sentencepiece_model.proto)
def _varint(n):
    b = bytearray()
    while True:
        x = n & 0x7F
        n >>= 7
        b.append(x | (0x80 if n else 0))
        if not n:
            return bytes(b)


def _field(num, wire, payload):
    key = _varint((num << 3) | wire)
    if wire == 0:
        return key + _varint(payload)
    if wire == 5:
        return key + struct.pack("<f", payload)
    return key + _varint(len(payload)) + payload  # wire 2: bytes / nested message


SPM_EXTRA = ["\u2581"] + list("etaoinsrhldcumfpgwybvkxjqz") + [
    "\u2581t", "\u2581a", "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es",
    "or", "te", "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou",
    "io", "le", "ve", "co"]


def spm_pieces():
    """[(piece, score, type)]; types: 1 normal, 2 unknown, 3 control, 6 byte."""
    p = [("<unk>", 0.0, 2), ("<s>", 0.0, 3), ("</s>", 0.0, 3)]
    p += [(f"<0x{b:02X}>", 0.0, 6) for b in range(256)]
    p += [(t, -float(i), 1) for i, t in enumerate(SPM_EXTRA)]
    assert len(p) == 320
    return p


def spm_model_bytes():
    m = b"".join(_field(1, 2, _field(1, 2, t.encode()) + _field(2, 5, s) + _field(3, 0, ty))
                 for t, s, ty in spm_pieces())
    trainer = _field(3, 0, 2) + _field(4, 0, 320) + _field(35, 0, 1)  # BPE, vocab_size, byte_fallback
    norm = _field(1, 2, b"identity") + _field(3, 0, 0) + _field(4, 0, 0) + _field(5, 0, 1)
    return m + _field(2, 2, trainer) + _field(3, 2, norm)


def with_kv_heads(arch, kv):
    """arch's config with kv KV heads, each with the family's query group (tensor-parallel tests)."""
    c = dict(CONFIGS[arch])
    c["num_attention_heads"] = kv * (c["num_attention_heads"] // c["num_key_value_heads"])
    c["num_key_value_heads"] = kv
    return c


def write(arch, outdir, kv_heads=None):
    if arch not in CONFIGS:
        sys.exit(f"tiny_models.py: unknown ARCH {arch!r} (one of {' '.join(ARCHS)})")
    if kv_heads is not None:
        CONFIGS[arch] = with_kv_heads(arch, kv_heads)  # this process only: tensor_specs reads it
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "config.json"), "w") as f:
        f.write(json.dumps(CONFIGS[arch], indent=2, sort_keys=True) + "\n")
    with open(os.path.join(outdir, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(make_tensors(arch)))
    with open(os.path.join(outdir, "tokenizer.model"), "wb") as f:
        f.write(spm_model_bytes())


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print(" ".join(ARCHS))
    elif len(sys.argv) == 3:
        write(sys.argv[1], sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[3] == "--kv-heads" and sys.argv[4].isdigit() and int(sys.argv[4]) > 0:
        write(sys.argv[1], sys.argv[2], int(sys.argv[4]))
    else:
        sys.exit(__doc__)
