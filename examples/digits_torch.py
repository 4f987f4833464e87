#!/usr/bin/python3
"""The digits CNN of examples/digits_cnn.c in PyTorch: the same network from
wick's initial weights, the same batches in the same order (digits_data.py's
order.npy), the same AdamW -> per-step losses and test accuracy.

    digits_torch.py --data DIR --init init.safetensors [--losses-out torch.json]
                    [--compare wick.json --steps-compared 100 --tol 0.01]

With --compare it checks wick's curve (digits_cnn --losses-out) against its
own: the max relative gap over the first --steps-compared steps must be at
most --tol, and the test accuracies within --acc-tol (exit 1 otherwise)."""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_common import curve_gap, load_into


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return self.fc(h.flatten(1))


def load_data(d):
    g = lambda n: torch.from_numpy(np.load(os.path.join(d, n + ".npy")))
    return g("train_x"), g("train_y"), g("test_x"), g("test_y"), g("order")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--init", required=True)
    ap.add_argument("--epochs", type=int, default=15)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-2)
    ap.add_argument("--steps", type=int, default=-1)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--losses-out")
    ap.add_argument("--compare")
    ap.add_argument("--steps-compared", type=int, default=100)
    ap.add_argument("--tol", type=float, default=0.01)
    ap.add_argument("--acc-tol", type=float, default=0.02)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    trx, tr_y, tex, tey, order = load_data(a.data)
    model = DigitsCNN()
    load_into(model, a.init)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    n = trx.shape[0]
    per_epoch = n // a.batch
    total = per_epoch * a.epochs if a.steps < 0 else min(a.steps, per_epoch * a.epochs)
    losses = []
    for s in range(total):
        e, b = divmod(s, per_epoch)
        ids = order[e, b * a.batch:(b + 1) * a.batch]
        loss = F.cross_entropy(model(trx[ids]), tr_y[ids])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    with torch.no_grad():
        acc = (model(tex).argmax(1) == tey).double().mean().item()
    print(f"torch: test accuracy {100 * acc:.2f}% after {total} steps, last loss {losses[-1]:.4f}")
    if a.losses_out:
        with open(a.losses_out, "w") as f:
            json.dump({"test_accuracy": acc, "losses": losses}, f)
    if a.compare:
        with open(a.compare) as f:
            w = json.load(f)
        gap, at, k = curve_gap(w["losses"], losses, a.steps_compared)
        dacc = abs(w["test_accuracy"] - acc)
        print(f"wick vs torch: max relative loss gap {gap:.2e} (step {at + 1} of the first {k}); "
              f"test accuracy wick {100 * w['test_accuracy']:.2f}% torch {100 * acc:.2f}%")
        if len(w["losses"]) != total:
            sys.exit(f"FAIL: wick ran {len(w['losses'])} steps, torch {total}")
        if gap > a.tol:
            sys.exit(f"FAIL: the curves diverge: gap {gap:.3e} > {a.tol}")
        if dacc > a.acc_tol:
            sys.exit(f"FAIL: test accuracies differ by {100 * dacc:.2f} points > {100 * a.acc_tol:.2f}")
        print("OK")


if __name__ == "__main__":
    main()
