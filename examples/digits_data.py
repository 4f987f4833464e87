#!/usr/bin/python3
"""Export scikit-learn's bundled digits (1,797 8x8 images) for the training
example, with a FIXED train/test split and a FIXED batch order, so that
examples/digits_cnn.c (wick) and examples/digits_torch.py (PyTorch) see the
same data in the same order.

    /usr/bin/python3 examples/digits_data.py OUT_DIR [--epochs E] [--seed S]

Writes into OUT_DIR:
  train_x.npy f32 (N, 1, 8, 8)  pixel values / 16, in [0, 1]
  train_y.npy i64 (N,)
  test_x.npy  f32 (M, 1, 8, 8)
  test_y.npy  i64 (M,)
  order.npy   i64 (E, N)        one permutation of the training rows per epoch
The split: train_test_split(test_size=0.25, random_state=0, stratify=y).
"""
import argparse
import os

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0).reshape(-1, 1, 8, 8)
    y = d.target.astype(np.int64)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.25, random_state=0, stratify=y)
    rng = np.random.default_rng(a.seed)
    order = np.stack([rng.permutation(len(ytr)) for _ in range(a.epochs)]).astype(np.int64)
    for name, arr in (("train_x", xtr), ("train_y", ytr), ("test_x", xte), ("test_y", yte), ("order", order)):
        np.save(os.path.join(a.out_dir, name + ".npy"), np.ascontiguousarray(arr))
    print(f"digits: {len(ytr)} train, {len(yte)} test, {a.epochs} epochs of batch order -> {a.out_dir}")


if __name__ == "__main__":
    main()
