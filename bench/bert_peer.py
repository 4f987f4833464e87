"""The peer for bench/bench_bert.c: the same BERT forward + mean pooling + L2
normalisation in PyTorch (Debian's torch 1.13 through the venv python,
which sees the system packages), f32, weights from model.safetensors.

usage: bert_peer.py MODEL_DIR TOKENS BATCH THREADS REPS [wall|cpu]
prints the median seconds of one call embedding BATCH sequences of TOKENS
ids (the same ids bench_bert.c uses), after one warm-up call; "cpu" times
by the process's CPU time (time.process_time) instead of wall time.
"""
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import load_file


def main():
    model_dir, L, B, threads, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    clock = time.process_time if len(sys.argv) > 6 and sys.argv[6] == "cpu" else time.perf_counter
    torch.set_num_threads(threads)
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    W = {k: torch.from_numpy(v) for k, v in load_file(os.path.join(model_dir, "model.safetensors")).items()}
    H, D, eps = cfg["num_attention_heads"], cfg["hidden_size"], cfg["layer_norm_eps"]
    hd = D // H
    pos_type = W["embeddings.position_embeddings.weight"] + W["embeddings.token_type_embeddings.weight"][0]
    layers = []
    for i in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % i
        g = lambda n: W[p + n]
        qkv_w = torch.cat([g("attention.self.%s.weight" % n) for n in ("query", "key", "value")])
        qkv_b = torch.cat([g("attention.self.%s.bias" % n) for n in ("query", "key", "value")])
        layers.append((qkv_w, qkv_b, g("attention.output.dense.weight"), g("attention.output.dense.bias"),
                       g("attention.output.LayerNorm.weight"), g("attention.output.LayerNorm.bias"),
                       g("intermediate.dense.weight"), g("intermediate.dense.bias"), g("output.dense.weight"),
                       g("output.dense.bias"), g("output.LayerNorm.weight"), g("output.LayerNorm.bias")))
    # bench_bert.c's ids: [CLS], then 2000 + (7 * (i * L + j)) % 20000, then [SEP]
    ids = torch.tensor([[101] + [2000 + (7 * (i * L + j)) % 20000 for j in range(1, L - 1)] + [102] for i in range(B)])

    @torch.no_grad()
    def embed():
        x = W["embeddings.word_embeddings.weight"][ids] + pos_type[:L]
        x = F.layer_norm(x, (D,), W["embeddings.LayerNorm.weight"], W["embeddings.LayerNorm.bias"], eps)
        for (qw, qb, ow, ob, l1w, l1b, iw, ib, fw, fb, l2w, l2b) in layers:
            q, k, v = F.linear(x, qw, qb).view(B, L, 3, H, hd).permute(2, 0, 3, 1, 4)
            s = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(hd), dim=-1)
            a = (s @ v).transpose(1, 2).reshape(B, L, D)
            x = F.layer_norm(F.linear(a, ow, ob) + x, (D,), l1w, l1b, eps)
            x = F.layer_norm(F.linear(F.gelu(F.linear(x, iw, ib)), fw, fb) + x, (D,), l2w, l2b, eps)
        return F.normalize(x.mean(dim=1), dim=-1)

    embed()
    times = []
    for _ in range(reps):
        t0 = clock()
        embed()
        times.append(clock() - t0)
    print("%.9f" % float(np.median(times)))


if __name__ == "__main__":
    main()
