#!/usr/bin/env python3
"""Train a small MLP on scikit-learn's digits (8x8 images, 10 classes) with
wick from Python: parameters are leaf tensors that require grad, the forward
pass is wick ops, `loss.backward()` fills `.grad`, and `wick.optim.Adam`
updates the parameters in place.

    python examples/python/train_digits.py [--epochs 20] [--limit N] [--hidden 64]

Prints the loss per epoch and the test accuracy; exits 1 when the accuracy
is not well above chance (10 %), so it doubles as a test (ctest runs it at a
small size: --epochs 4 --limit 300). Exits 77 (ctest's "skipped") when this
build of wick lacks an op the example uses.
"""
import argparse
import math
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import wick

try:
    relu = wick.relu
    cross_entropy = wick.nn.functional.cross_entropy
except AttributeError as e:  # a partial build of the binding
    print(f"train_digits: skipped, this wick lacks an op ({e})")
    sys.exit(77)


def uniform(shape, bound):
    """torch.nn.Linear's default init: U(-bound, bound)."""
    return (wick.rand(*shape) * (2 * bound) - bound).requires_grad_()


class MLP:
    def __init__(self, sizes):
        self.layers = []
        for n_in, n_out in zip(sizes, sizes[1:]):
            b = 1 / math.sqrt(n_in)
            self.layers.append((uniform((n_in, n_out), b), uniform((n_out,), b)))

    def parameters(self):
        return [p for layer in self.layers for p in layer]

    def __call__(self, x):
        for i, (w, b) in enumerate(self.layers):
            x = x @ w + b
            if i + 1 < len(self.layers):
                x = relu(x)
        return x


def accuracy(model, x, y):
    with wick.no_grad():
        logits = model(wick.from_numpy(x))
    return float((logits.numpy().argmax(axis=1) == y).mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--limit", type=int, default=0, help="use only the first N training images (0: all)")
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--min-accuracy", type=float, default=0.6, help="exit 1 below this test accuracy")
    a = ap.parse_args(argv)

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    if a.limit:
        xtr, ytr = xtr[: a.limit], ytr[: a.limit]

    wick.manual_seed(a.seed)
    rng = np.random.default_rng(a.seed)
    model = MLP([64, a.hidden, 10])
    opt = wick.optim.Adam(model.parameters(), lr=a.lr)
    print(f"digits: {len(ytr)} train, {len(yte)} test; MLP 64-{a.hidden}-10, Adam lr {a.lr}")

    t0 = time.perf_counter()
    for epoch in range(a.epochs):
        order = rng.permutation(len(ytr))
        total, n = 0.0, 0
        for s in range(0, len(order), a.batch):
            idx = order[s : s + a.batch]
            # numpy's fancy indexing makes a fresh array; wick.from_numpy shares it
            xb, yb = wick.from_numpy(xtr[idx]), wick.from_numpy(ytr[idx])
            loss = cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            n += len(idx)
        print(f"epoch {epoch + 1:3d}  loss {total / n:.4f}  test accuracy {accuracy(model, xte, yte):.3f}")
    acc = accuracy(model, xte, yte)
    print(f"test accuracy {acc:.3f} after {opt.steps} steps ({time.perf_counter() - t0:.2f} s)")
    if acc < a.min_accuracy:
        print(f"train_digits: FAILED, accuracy {acc:.3f} < {a.min_accuracy}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
