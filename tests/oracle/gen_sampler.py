#!/usr/bin/env python3
"""Oracle for the token sampler (src/model/sampler.c): numpy applies
llama.cpp's chain of filters to fixed logits and says which ids survive,
with what probability, and which ids a seeded draw gives.

    /usr/bin/python3 tests/oracle/gen_sampler.py OUTDIR

writes OUTDIR/sampler/manifest.txt and OUTDIR/sampler/cNNN_*.npy; read by
tests/test_sampler.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case:

    id logits hist temp top_k top_p min_p rp last_n ids probs draws

  logits  f32 FILE (n,)
  hist    i32 FILE of history ids, or '-' for none
  ids     i32 FILE: the survivors in order (logit descending, lower id first)
  probs   f64 FILE: their final probabilities
  draws   i32 FILE: the first 32 ids wk_sampler_sample gives with seed
          0x5EED + id, each call on the same logits and history

The rules, as llama.cpp applies them (common_sampler's default order):
  1. repetition penalty, once per distinct id among the last last_n history
     ids (last_n < 0: all): logit > 0 ? logit / rp : logit * rp
  2. temp <= 0: the argmax (lowest id on ties), probability 1, stop here
  3. -inf logits drop out; order by logit descending, lower id first
     (when no filter is on, top_k off, top_p >= 1, min_p <= 0, the ids stay
     in ascending order and go straight to 7)
  4. top-k (k > 0): the first k
  5. top-p (< 1): softmax at temperature 1 over what is left; the shortest
     prefix whose cumulative probability reaches top_p (at least 1)
  6. min-p (> 0): keep exp(logit - max) >= min_p (at least 1)
  7. softmax of logit / temp over the survivors
The draw: xoshiro256** seeded by four splitmix64 outputs of the seed;
u = (next >> 11) * 2^-53; the first survivor whose cumulative probability
exceeds u (the last one if rounding leaves u above the sum). One survivor
is returned without a draw.
"""
import os
import sys

import numpy as np

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Xoshiro:
    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x, v = splitmix64(x)
            self.s.append(v)

    def next(self):
        s = self.s
        r = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return r

    def uniform(self):
        return (self.next() >> 11) * 2.0 ** -53


def reference(logits, hist, temp, top_k, top_p, min_p, rp, last_n):
    lg = logits.astype(np.float64).copy()
    if rp != 1 and last_n != 0 and hist is not None and len(hist):
        window = hist if last_n < 0 else hist[-last_n:]
        for i in np.unique(window):
            lg[i] = lg[i] / rp if lg[i] > 0 else lg[i] * rp
    if temp <= 0:
        return np.array([int(np.argmax(lg))], np.int32), np.array([1.0])
    ids = np.arange(len(lg))
    fin = ids[lg > -np.inf]
    mx = lg[fin].max()
    if not (0 < top_k < len(fin)) and top_p >= 1 and min_p <= 0:
        w = np.exp((lg[fin] - mx) / temp)   # nothing to cut: id order
        return fin.astype(np.int32), w / w.sum()
    order = fin[np.lexsort((fin, -lg[fin]))]
    if top_k > 0:
        order = order[:top_k]
    mx = lg[order[0]]
    if top_p < 1:
        p = np.exp(lg[order] - mx)
        cum = np.cumsum(p / p.sum())
        hit = np.nonzero(cum >= top_p)[0]
        order = order[:hit[0] + 1 if len(hit) else len(order)]
    if min_p > 0:
        ok = np.exp(lg[order] - mx) >= min_p
        k = int(np.argmin(ok)) if not ok.all() else len(order)
        order = order[:max(k, 1)]
    w = np.exp((lg[order] - mx) / temp)
    return order.astype(np.int32), w / w.sum()


def draws(ids, probs, seed, count=32):
    if len(ids) == 1:
        return np.full(count, ids[0], np.int32)
    rng = Xoshiro(seed)
    out = []
    for _ in range(count):
        u = rng.uniform()
        acc = 0.0
        pick = ids[-1]
        for i, p in zip(ids, probs):
            acc += p
            if u < acc:
                pick = i
                break
        out.append(pick)
    return np.array(out, np.int32)


def main():
    out = os.path.join(sys.argv[1], 'sampler')
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0x5A3B1E)
    cases = []

    def case(logits, hist, temp=1.0, top_k=0, top_p=1.0, min_p=0.0, rp=1.0, last_n=64):
        cases.append((np.asarray(logits, np.float32), hist, temp, top_k, top_p, min_p, rp, last_n))

    def rand_logits(n, scale=3.0, ties=False):
        x = rng.normal(0, scale, n)
        return np.round(x, 1) if ties else x

    # each filter alone
    for n in (7, 100, 1000):
        x = rand_logits(n)
        for k in (1, 3, 40):
            case(x, None, top_k=k)
        for p in (0.05, 0.5, 0.9, 0.999):
            case(x, None, top_p=p)
        for mp in (0.01, 0.2, 0.9):
            case(x, None, min_p=mp)
        for t in (0.3, 1.0, 2.5):
            case(x, None, temp=t)
        h = rng.integers(0, n, 80).astype(np.int32)
        for rp, ln in ((1.3, 64), (0.7, 64), (1.5, -1), (1.5, 5)):
            case(x, h, temp=0.0, rp=rp, last_n=ln)
            case(x, h, temp=1.0, top_k=10, rp=rp, last_n=ln)
    # greedy with ties goes to the lowest id
    t = np.zeros(50, np.float32)
    t[[7, 19, 33]] = 4.0
    case(t, None, temp=0.0)
    case(t, None, temp=1.0, top_k=2)          # ties: ids 7 and 19
    case(t, None, temp=1.0, min_p=0.5)       # the three tied maxima survive
    # heavy ties and -inf holes
    x = rand_logits(300, ties=True)
    x[rng.integers(0, 300, 60)] = -np.inf
    case(x, None, top_k=25)
    case(x, None, top_p=0.7)
    case(x, None, temp=0.8, top_k=40, top_p=0.95, min_p=0.05)
    # llama.cpp's defaults and the real vocabulary size (no top-k: the
    # lazily sorted prefix grows several times)
    for n in (49152,):
        x = rand_logits(n, scale=2.0)
        x[:5] += 8
        case(x, None, temp=0.8, top_k=40, top_p=0.95, min_p=0.05)
        case(x, None, temp=0.8, top_p=0.95)
        case(x, None, temp=1.0, top_p=0.3)
        case(x, None, temp=0.8, min_p=0.05)
        case(x, None, temp=0.9)
        h = rng.integers(0, n, 200).astype(np.int32)
        case(x, h, temp=0.8, top_k=40, top_p=0.95, min_p=0.05, rp=1.1, last_n=64)
        case(x, h, temp=0.0, rp=1.1, last_n=-1)

    lines = ['# id logits hist temp top_k top_p min_p rp last_n ids probs draws (see gen_sampler.py)']
    for i, (x, h, temp, k, p, mp, rp, ln) in enumerate(cases):
        ids, probs = reference(x, h, temp, k, p, mp, rp, ln)
        dr = draws(ids, probs, 0x5EED + i)
        names = [f'c{i:03d}_{s}.npy' for s in ('logits', 'hist', 'ids', 'probs', 'draws')]
        np.save(os.path.join(out, names[0]), x)
        if h is not None:
            np.save(os.path.join(out, names[1]), h)
        np.save(os.path.join(out, names[2]), ids)
        np.save(os.path.join(out, names[3]), probs)
        np.save(os.path.join(out, names[4]), dr)
        lines.append(f'{i} {names[0]} {names[1] if h is not None else "-"} {temp!r} {k} {p!r} {mp!r} {rp!r} {ln} '
                     f'{names[2]} {names[3]} {names[4]}')
    with open(os.path.join(out, 'manifest.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
