"""Independent reference for wick's BERT encoder (tests/test_bert.c).

A BERT forward written here with numpy alone, in float64, from the
safetensors file (safetensors.numpy) and ids from HF `tokenizers` on the
model's tokenizer.json: embeddings, 6 x (attention, FFN with erf GELU),
mean pooling over the tokens, L2 normalisation (sentence-transformers'
pipeline for all-MiniLM-L6-v2). Every sentence runs on its own (no padding),
so wick's padded batches are checked against unpadded references.

usage: bert_oracle.py MODEL_DIR OUT_DIR
writes OUT_DIR/case<i>.txt (the text, UTF-8), case<i>_ids.npy (int32),
case<i>_hidden.npy (f32 (L, dim), last hidden state), case<i>_emb.npy (f32
(dim,)), and cases.txt (the count). Run by the venv python (safetensors and
tokenizers are PyPI packages).
"""
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

# Short, long, unicode, empty, digits: each becomes one case; the C test also
# runs them as padded batches of unequal lengths.
TEXTS = [
    "This is a test sentence.",
    "Hi",
    "naïve café 日本語 🙂 — Ünïcödé Straße, ＦＵＬＬＷＩＤＴＨ and ﬁne ligatures",
    "",
    "In 2024, 12345 apples cost $3.50! Don't they?",
    "The quick brown fox jumps over the lazy dog. " * 3
    + "Sentence embeddings map a whole text to one vector, so that texts with similar meanings "
    "lie close together; mean pooling averages the encoder's last hidden state over the real tokens "
    "and ignores the padding that a batch of unequal lengths needs.",
]

# models.md: sentence-transformers 6.2.0 on "This is a test sentence."
REF_IDS = [101, 2023, 2003, 1037, 3231, 6251, 1012, 102]
REF_EMB8 = [0.084296, 0.057954, 0.004493, 0.105821, 0.007083, -0.017845, -0.016888, -0.015228]
REF_SUM = 0.162110
REF_CLS4 = [0.08916, -0.12567, 0.04061, 0.19690]

_erf = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(np.float64))


def layer_norm(x, w, b, eps):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def forward(W, cfg, ids):
    g = lambda name: W[name].astype(np.float64)
    eps = cfg["layer_norm_eps"]
    H = cfg["num_attention_heads"]
    L = len(ids)
    pos = W["embeddings.position_ids"].reshape(-1)[:L]
    x = g("embeddings.word_embeddings.weight")[ids]
    x = x + g("embeddings.position_embeddings.weight")[pos]
    x = x + g("embeddings.token_type_embeddings.weight")[0]
    x = layer_norm(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    D = x.shape[1]
    hd = D // H
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        lin = lambda name, t: t @ g(p + name + ".weight").T + g(p + name + ".bias")
        heads = lambda t: t.reshape(L, H, hd).transpose(1, 0, 2)  # (H, L, hd)
        q = heads(lin("attention.self.query", x))
        k = heads(lin("attention.self.key", x))
        v = heads(lin("attention.self.value", x))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(axis=-1, keepdims=True))
        s = s / s.sum(axis=-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(L, D)
        x = layer_norm(lin("attention.output.dense", a) + x, g(p + "attention.output.LayerNorm.weight"),
                       g(p + "attention.output.LayerNorm.bias"), eps)
        h = gelu_erf(lin("intermediate.dense", x))
        x = layer_norm(lin("output.dense", h) + x, g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"),
                       eps)
    return x


def main():
    model_dir, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    assert cfg["hidden_act"] == "gelu", cfg["hidden_act"]  # HF's "gelu" is the erf form
    W = load_file(os.path.join(model_dir, "model.safetensors"))
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.no_padding()  # the file pads to 128; references are unpadded
    tok.enable_truncation(256)  # sentence-transformers' max_seq_length
    for i, text in enumerate(TEXTS):
        ids = tok.encode(text).ids
        hid = forward(W, cfg, np.array(ids))
        emb = hid.mean(axis=0)
        emb = emb / np.linalg.norm(emb)
        if i == 0:
            # the oracle itself must reproduce sentence-transformers' numbers
            assert ids == REF_IDS, ids
            assert np.allclose(emb[:8], REF_EMB8, atol=2e-6), emb[:8]
            assert abs(emb.sum() - REF_SUM) < 2e-6, emb.sum()
            assert np.allclose(hid[0, :4], REF_CLS4, atol=2e-5), hid[0, :4]
        with open(os.path.join(out_dir, "case%d.txt" % i), "wb") as f:
            f.write(text.encode("utf-8"))
        np.save(os.path.join(out_dir, "case%d_ids.npy" % i), np.array(ids, dtype=np.int32))
        np.save(os.path.join(out_dir, "case%d_hidden.npy" % i), hid.astype(np.float32))
        np.save(os.path.join(out_dir, "case%d_emb.npy" % i), emb.astype(np.float32))
    with open(os.path.join(out_dir, "cases.txt"), "w") as f:
        f.write("%d\n" % len(TEXTS))


if __name__ == "__main__":
    main()
