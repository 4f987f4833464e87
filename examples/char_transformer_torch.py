#!/usr/bin/python3
"""examples/char_transformer.c's model in PyTorch (Debian torch 1.13): the
same network from wick's initial weights (--init), the same batches
(splitmix64 offsets, as char_model.h), the same AdamW -> per-step losses.

    char_transformer_torch.py --init init.safetensors [--losses-out torch.json]
                              [--compare wick.json --tol 0.05]

With --compare: prints the max relative gap between wick's curve and this
one and fails (exit 1) when it exceeds --tol or when either loss did not
fall (mean of the last tenth < 80% of step 1)."""
import argparse
import json
import math
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_common import curve_gap, load_into

VOCAB = 128
M64 = (1 << 64) - 1


def splitmix(state):
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & M64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def batch(text, B, T, state):
    offs = [splitmix(state) % (len(text) - T - 1) for _ in range(B)]
    x = torch.stack([text[o:o + T] for o in offs])
    y = torch.stack([text[o + 1:o + T + 1] for o in offs])
    return x, y


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        H = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.reshape(B, T, H, d // H).transpose(1, 2) for t in (q, k, v))
        # torch 1.13 has no scaled_dot_product_attention: the plain form
        s = q @ k.transpose(-1, -2) / math.sqrt(d // H)
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        a = torch.softmax(s.masked_fill(mask, float("-inf")), dim=-1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class CharTransformer(nn.Module):
    def __init__(self, d=64, heads=4, layers=2, ctx=64):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d)
        self.pos = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, VOCAB, bias=False)

    def forward(self, ids):
        x = self.tok(ids) + self.pos.weight[:ids.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln_f(x))


def fell(losses):
    tail = max(len(losses) // 10, 1)
    return sum(losses[-tail:]) / tail < 0.8 * losses[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--init", required=True)
    ap.add_argument("--text", default="/usr/share/common-licenses/GPL-3")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--ctx", type=int, default=64)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-2)
    ap.add_argument("--data-seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--losses-out")
    ap.add_argument("--compare")
    ap.add_argument("--tol", type=float, default=0.05)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    with open(a.text, "rb") as f:
        text = torch.tensor(list(f.read()), dtype=torch.int64)
    model = CharTransformer(a.dim, a.heads, a.layers, a.ctx)
    load_into(model, a.init)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    state = [a.data_seed]
    losses = []
    for s in range(a.steps):
        x, y = batch(text, a.batch, a.ctx, state)
        loss = F.cross_entropy(model(x).reshape(-1, VOCAB), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print(f"torch: loss {losses[0]:.4f} at step 1, {losses[-1]:.4f} at step {a.steps}")
    if a.losses_out:
        with open(a.losses_out, "w") as f:
            json.dump({"losses": losses}, f)
    if a.compare:
        with open(a.compare) as f:
            w = json.load(f)["losses"]
        gap, at, k = curve_gap(w, losses, len(losses))
        print(f"wick vs torch: max relative loss gap {gap:.2e} (step {at + 1} of {k}); "
              f"final loss wick {w[-1]:.4f} torch {losses[-1]:.4f}")
        if len(w) != len(losses):
            sys.exit(f"FAIL: wick ran {len(w)} steps, torch {len(losses)}")
        if not fell(w) or not fell(losses):
            sys.exit("FAIL: a loss did not fall")
        if gap > a.tol:
            sys.exit(f"FAIL: the curves diverge: gap {gap:.3e} > {a.tol}")
        print("OK")


if __name__ == "__main__":
    main()
