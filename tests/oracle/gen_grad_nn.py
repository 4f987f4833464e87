#!/usr/bin/env python3
"""Oracle for the backward of the fused nn ops (softmax, log_softmax,
rms_norm, layer_norm, rope, rope_thd, attention, swiglu): PyTorch autograd
in float64 computes the gradients wick must return.

    /usr/bin/python3 tests/oracle/gen_grad_nn.py OUTDIR

writes only OUTDIR/grad_nn/manifest.txt and OUTDIR/grad_nn/gNNNNN.npy; read
by tests/test_oracle_grad_nn.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of eight
space-separated fields:

    id op dtype params inputs weight grads tol

  op       softmax | log_softmax | rms_norm | layer_norm | rope | rope_thd |
           attention | swiglu
  dtype    the dtype every input is converted to (the f64 files hold values
           already on that dtype's grid)
  params   k=v pairs joined by ';': dim=, inter=0|1, causal=0|1, off=,
           scale= (0: 1/sqrt(D)), win= (window), cap= (softcap) ('-' for
           none); eps is 1e-5
  inputs   ','-joined specs FILE[@VIEW+VIEW...] (tests/oracle_util.h
           views: t, pA:B:..), '-' for an absent optional input. Order:
           softmax x; rms_norm x,w; layer_norm x,w,b; rope x,cos,sin;
           attention q,k,v,mask; swiglu x
  weight   f64 FILE R of the output's shape: the loss is sum(op(...) * R)
  grads    ','-joined f64 FILEs, d loss / d input, one per input; '-' for an
           input that is absent or not tracked (no gradient asked)
  tol      |got - want| <= tol * (1 + |want|)

The functions are written with torch float64 ops (torch 1.13 has no
rms_norm and no GQA attention): rope as candle (inter=0 rotates (x[i],
x[i + D/2]), inter=1 (x[2i], x[2i+1])), attention softmax(q k^T * scale +
mask) v with query head h reading kv head h // (Hq / Hkv) and causal
keeping key j <= i + off.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x9AD
EPS = 1e-5
TOL = {'f64': 1e-10, 'f32': 3e-5, 'f16': 1e-2, 'bf16': 6e-2}


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'grad_nn')
        self.files = oc.NpyFiles(self.dir, 'g')
        self.lines = []
        self.rng = np.random.default_rng(SEED)

    def values(self, shape, dt, scale=1.0, shift=0.0):
        v = self.rng.standard_normal(shape) * scale + shift
        return oc.round_float(v, dt)

    def spec(self, x, view):
        if x is None:
            return '-'
        if view == 'c':
            return self.files.save(x)
        if view == 't':
            return self.files.save(np.ascontiguousarray(np.swapaxes(x, -1, -2))) + '@t'
        if view.startswith('p'):
            perm = [int(z) for z in view[1:].split(':')]
            return self.files.save(np.ascontiguousarray(np.transpose(x, np.argsort(perm)))) + '@' + view
        raise ValueError(view)

    def case(self, op, dt, params, fn, inputs, views, track):
        """inputs: arrays (None: absent); fn: torch function of the tensors."""
        ts = [None if x is None else torch.tensor(x, dtype=torch.float64, requires_grad=bool(tr))
              for x, tr in zip(inputs, track)]
        y = fn(*ts)
        r = self.rng.uniform(-1, 1, tuple(y.shape))
        (y * torch.from_numpy(r)).sum().backward()
        grads = []
        for t, tr in zip(ts, track):
            if t is None or not tr:
                grads.append('-')
            else:
                g = t.grad if t.grad is not None else torch.zeros_like(t)
                grads.append(self.files.save(g.detach().numpy()))
        specs = [self.spec(x, v) for x, v in zip(inputs, views)]
        pid = '%04d.%s.%s' % (len(self.lines), op, dt)
        self.lines.append(' '.join([pid, op, dt, params or '-', ','.join(specs), self.files.save(r),
                                    ','.join(grads), repr(TOL[dt])]))

    def write(self):
        oc.write_manifest(self.dir, [' grad_nn oracle (torch autograd, float64), seed %#x' % SEED], self.lines)


def rms_norm(x, w):
    y = x / torch.sqrt((x * x).mean(-1, keepdim=True) + EPS)
    return y * w if w is not None else y


def rope(x, c, s, inter, thd):
    if thd:  # (B, T, H, D): cos / sin (T, D/2) broadcast over heads
        c, s = c[:, None, :], s[:, None, :]
    h = x.shape[-1] // 2
    if inter:
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * c - b * s, a * s + b * c], -1).reshape(x.shape)
    a, b = x[..., :h], x[..., h:]
    return torch.cat([a * c - b * s, a * s + b * c], -1)


def attention(q, k, v, mask, causal, off, scale, window=0, softcap=0.0):
    group = q.shape[-3] // k.shape[-3]
    k = k.repeat_interleave(group, dim=-3)
    v = v.repeat_interleave(group, dim=-3)
    if scale <= 0:
        scale = 1.0 / np.sqrt(q.shape[-1])
    s = q @ k.transpose(-1, -2) * scale
    if softcap > 0:  # Gemma 2's logit soft-capping, before the mask
        s = softcap * torch.tanh(s / softcap)
    if mask is not None:
        s = s + mask
    lq, lk = s.shape[-2], s.shape[-1]
    pos, key = torch.arange(lq)[:, None] + off, torch.arange(lk)[None, :]
    keep = torch.ones(lq, lk, dtype=torch.bool)
    if causal:
        keep &= key <= pos
    if window > 0:  # sliding window: the window most recent keys
        keep &= pos - key < window
    s = s.masked_fill(~keep, float('-inf'))
    return torch.softmax(s, -1) @ v


def swiglu(x):
    h = x.shape[-1] // 2
    return F.silu(x[..., :h]) * x[..., h:]


def main():
    g = Gen(sys.argv[1])
    for dt in ['f64', 'f32', 'f16', 'bf16']:
        # softmax / log_softmax over each dim, a transposed input
        for op, f in [('softmax', torch.softmax), ('log_softmax', torch.log_softmax)]:
            for dim in [0, 1, -1]:
                x = g.values((3, 4, 5), dt, 2.0)
                g.case(op, dt, 'dim=%d' % dim, lambda t, d=dim, f=f: f(t, d), [x], ['c'], [1])
            x = g.values((6, 7), dt, 2.0)
            g.case(op, dt, 'dim=1', lambda t, f=f: f(t, 1), [x], ['t'], [1])
        # norms: weight / bias present or not, tracked or not, a permuted x
        x = g.values((2, 3, 8), dt)
        w = g.values((8,), dt, 0.3, 1.0)
        b = g.values((8,), dt, 0.3)
        g.case('rms_norm', dt, '-', rms_norm, [x, w], ['p1:0:2', 'c'], [1, 1])
        g.case('rms_norm', dt, '-', rms_norm, [x, None], ['c', 'c'], [1, 0])
        g.case('rms_norm', dt, '-', rms_norm, [x, w], ['c', 'c'], [0, 1])
        ln = lambda t, ww, bb: F.layer_norm(t, (t.shape[-1],), ww, bb, EPS)  # noqa: E731
        g.case('layer_norm', dt, '-', ln, [x, w, b], ['p1:0:2', 'c', 'c'], [1, 1, 1])
        g.case('layer_norm', dt, '-', ln, [x, None, b], ['c', 'c', 'c'], [1, 0, 1])
        g.case('layer_norm', dt, '-', ln, [x, w, None], ['c', 'c', 'c'], [0, 1, 0])
        # rope: both pair layouts, both dim orders; cos / sin tracked or not
        for thd in [0, 1]:
            for inter in [0, 1]:
                x = g.values((2, 3, 4, 6), dt)
                t = x.shape[1] if thd else x.shape[2]
                c = g.values((t, 3), dt)
                s = g.values((t, 3), dt)
                f = lambda a, cc, ss, i=inter, th=thd: rope(a, cc, ss, i, th)  # noqa: E731
                op = 'rope_thd' if thd else 'rope'
                g.case(op, dt, 'inter=%d' % inter, f, [x, c, s], ['p0:2:1:3', 'c', 'c'], [1, 0, 0])
                g.case(op, dt, 'inter=%d' % inter, f, [x, c, s], ['c', 'c', 'c'], [1, 1, 1])
        # attention: GQA groups 1 / 2 / 4, masks 2-D and 4-D broadcast (tracked
        # or not), causal with Lq < Lk and an offset, head sizes, a long key run
        for (b_, hq, hkv, lq, lk, d, dv, mrank, causal, off, scale, perm, tm) in [
                (1, 2, 2, 5, 7, 8, 8, 0, 0, 0, 0.0, False, 0),
                (2, 4, 2, 4, 6, 3, 5, 2, 1, 2, 0.0, True, 0),
                (1, 4, 1, 3, 9, 64, 16, 4, 0, 0, 0.3, False, 1),
                (1, 2, 1, 6, 140, 80, 8, 0, 1, 134, 0.0, True, 0),
                (1, 4, 4, 3, 3, 1, 1, 2, 1, 0, 0.0, False, 1)]:
            q = g.values((b_, hq, lq, d), dt)
            k = g.values((b_, hkv, lk, d), dt)
            v = g.values((b_, hkv, lk, dv), dt)
            m = None
            if mrank == 2:
                m = g.values((lq, lk), dt)
            elif mrank == 4:
                m = g.values((b_, 1, lq, lk), dt)
            f = lambda a, bb, cc, mm, ca=causal, o=off, sc=scale: attention(a, bb, cc, mm, ca, o, sc)  # noqa: E731
            pv = 'p0:2:1:3' if perm else 'c'
            params = 'causal=%d;off=%d;scale=%r' % (causal, off, scale)
            g.case('attention', dt, params, f, [q, k, v, m], [pv, pv, pv, 'c'], [1, 1, 1, tm])
        # sliding window (win=) and soft-capping (cap=): decode over a cache,
        # prefill over several key tiles, GQA, no causal; a tracked mask
        # takes the composite backward
        for (b_, hq, hkv, lq, lk, d, mrank, causal, off, win, cap, perm, tm, vs) in [
                (1, 4, 1, 1, 300, 16, 0, 1, 299, 64, 0.0, False, 0, 1.0),
                (1, 4, 2, 1, 300, 16, 0, 1, 299, 64, 5.0, True, 0, 3.0),
                (1, 4, 2, 150, 150, 8, 0, 1, 0, 40, 2.0, False, 0, 3.0),
                (1, 2, 1, 6, 20, 8, 2, 1, 14, 5, 2.0, False, 1, 3.0),
                (2, 2, 2, 5, 30, 4, 0, 0, 20, 7, 0.0, False, 0, 1.0),
                (1, 2, 1, 5, 9, 4, 0, 1, 4, 1, 1.5, False, 0, 2.0)]:
            q = g.values((b_, hq, lq, d), dt, vs)
            k = g.values((b_, hkv, lk, d), dt, vs)
            v = g.values((b_, hkv, lk, d), dt)
            m = g.values((lq, lk), dt) if mrank == 2 else None
            f = lambda a, bb, cc, mm, ca=causal, o=off, w=win, cp=cap: attention(a, bb, cc, mm, ca, o, 0.0, w, cp)  # noqa: E731,E501
            pv = 'p0:2:1:3' if perm else 'c'
            params = 'causal=%d;off=%d;scale=0.0;win=%d;cap=%r' % (causal, off, win, cap)
            g.case('attention', dt, params, f, [q, k, v, m], [pv, pv, pv, 'c'], [1, 1, 1, tm])
        x = g.values((3, 10), dt)
        g.case('swiglu', dt, '-', swiglu, [x], ['t'], [1])
    g.write()


if __name__ == '__main__':
    main()
