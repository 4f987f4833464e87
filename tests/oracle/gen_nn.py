#!/usr/bin/env python3
"""Oracle for the fused nn ops of include/wick/nn.h (softmax, log_softmax,
rms_norm, layer_norm, rope, scaled dot-product attention): torch / numpy in
float64 compute what wick must return.

    /usr/bin/python3 tests/oracle/gen_nn.py OUTDIR

writes only OUTDIR/nn/manifest.txt and OUTDIR/nn/nNNNNN.npy; read by
tests/test_oracle_nn.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of seven
space-separated fields:

    id op dtype params inputs expected tol

  op       softmax | log_softmax | rms_norm | layer_norm | rope | sdpa |
           attention | rope_thd | swiglu
  dtype    the dtype every input is converted to (inputs are f64 files
           whose values are already on that dtype's grid)
  params   k=v pairs joined by ';': dim=, eps=, inter=0|1, scale=,
           causal=0|1, off= (attention's q_offset), win= (its window),
           cap= (its softcap) ('-' for none)
  inputs   ','-joined input specs FILE[@VIEW+VIEW...] (views as in
           tests/oracle_util.h: t = transpose of the last two dims,
           nD:S:L narrow, pA:B:.. permute), '-' for an absent optional
           input (weight, bias, mask). Order: softmax x; rms_norm x,w;
           layer_norm x,w,b; rope x,cos,sin; sdpa q,k,v,mask;
           attention q,k,v,mask; rope_thd x,cos,sin; swiglu x
  expected f64 FILE, or !STATUS (the call must fail with that status)
  tol      |got - want| <= tol * (1 + |want|); NaN must match NaN

rope follows candle: x (B, H, T, D), cos / sin (T, D/2); inter=0 rotates
(x[i], x[i + D/2]) (candle's rope), inter=1 rotates (x[2i], x[2i+1])
(candle's rope_i). sdpa is softmax(q k^T * scale + mask) v with an additive float mask and
torch's top-left causal rule (torch.ones(Lq, Lk).tril()), in torch float64
ops, checked against torch's own (1.13: private) scaled-dot-product
attention where that applies; scale=0 means 1/sqrt(D). attention is
wk_attention: q (B, Hq, Lq, D), k / v (B, Hkv, Lk, D*), query head h reads
kv head h // (Hq / Hkv), causal keeps key j <= i + off; a row with every
key masked is NaN, Lk = 0 gives zeros (torch's softmax(empty) @ v).
rope_thd is rope on x (B, T, H, D); swiglu is silu(x[..., :D/2]) *
x[..., D/2:]. These three are not op-table entries: test_oracle_nn.c runs
them itself.

The op table (op_table.def, the entries whose oracle is gen_nn) declares
the dtypes and layouts; after the sections, sweep() writes one case for
every declared (op, dtype, layout) no section covered, and fails on one it
cannot build. test_oracle_nn's test_table_coverage checks the same.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x22F
FLOATS = ['f32', 'f64', 'f16', 'bf16']
TOL = {'f64': 1e-12, 'f32': 4e-6, 'f16': 2e-3, 'bf16': 1.6e-2}


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'nn')
        self.files = oc.NpyFiles(self.dir, 'n')
        self.lines = []
        self.rng = np.random.default_rng(SEED)
        self.shape_of = {}     # input spec -> the shape of the tensor it builds
        self.covered = set()   # (op, dtype, layout) of the cases that must succeed

    def values(self, shape, dt, scale=1.0):
        n = int(np.prod(shape)) if len(shape) else 1
        v = self.rng.standard_normal(n).reshape(shape) * scale
        return oc.round_float(v, dt)

    def spec(self, x, view):
        """Save the base array whose wick view `view` is x; the spec."""
        if x is None:
            return '-'
        sp = self.spec_of(x, view)
        self.shape_of[sp] = np.shape(x)
        return sp

    def spec_of(self, x, view):
        if view == 'c':
            return self.files.save(x)
        if view == 't':
            return self.files.save(np.swapaxes(x, -1, -2)) + '@t'
        if view.startswith('n'):
            # x is the narrow [1, 1 + n) of a wider last dim
            d = x.ndim - 1
            shp = list(x.shape)
            shp[d] += 3
            base = self.rng.standard_normal(shp)
            base = oc.round_float(base, 'f64')
            base[..., 1:1 + x.shape[d]] = x
            return self.files.save(base) + '@n%d:1:%d' % (d, x.shape[d])
        if view.startswith('N'):
            # N<dim>:<start>:<extra>: x is the narrow [start, start + n) of
            # dim, in a base with extra more rows (a preallocated KV cache)
            d, st, ex = (int(z) for z in view[1:].split(':'))
            shp = list(x.shape)
            shp[d] += ex
            base = oc.round_float(self.rng.standard_normal(shp), 'f64')
            idx = [slice(None)] * x.ndim
            idx[d] = slice(st, st + x.shape[d])
            base[tuple(idx)] = x
            return self.files.save(base) + '@n%d:%d:%d' % (d, st, x.shape[d])
        if view.startswith('p'):
            perm = [int(z) for z in view[1:].split(':')]
            inv = np.argsort(perm)
            return self.files.save(np.transpose(x, inv)) + '@' + view
        raise ValueError(view)

    def case(self, op, dt, params, inputs, expected, tol=None):
        if not isinstance(expected, str):
            for lay in self.layouts(inputs, np.shape(expected)):
                self.covered.add((op, dt, lay))
        exp = expected if isinstance(expected, str) else self.files.save(oc.round_float(expected, dt))
        if tol is None:
            tol = TOL[dt]
        pid = '%04d.%s.%s' % (len(self.lines), op, dt)
        self.lines.append(' '.join([pid, op, dt, params or '-', ','.join(inputs), exp, repr(float(tol))]))

    def layouts(self, inputs, out_shape):
        """The table layouts one case covers (oc.case_layouts) from its
        present inputs' view chains and shapes."""
        present = [sp for sp in inputs if sp != '-']
        return oc.case_layouts([(sp.partition('@')[2].partition('#')[0], self.shape_of[sp]) for sp in present],
                               [out_shape])

    def write(self):
        oc.write_manifest(self.dir, [' nn oracle, seed %#x' % SEED], self.lines)


def t64(x):
    return torch.from_numpy(np.asarray(x, np.float64))


def views_for(rank):
    return ['c', 't', 'n'] if rank >= 2 else ['c']


def gen_softmax(g):
    shapes = [(7,), (3, 5), (2, 3, 4), (1,), (1, 1), (2, 1, 6), (0, 4), (4, 0)]
    for dt in FLOATS:
        for shape in shapes:
            for view in views_for(len(shape)):
                if 0 in shape and view != 'c':
                    continue
                x = g.values(shape, dt, 3.0)
                xs = g.spec(x, view)
                for dim in range(-len(shape), len(shape)):
                    with np.errstate(all='ignore'):
                        s = torch.softmax(t64(x), dim).numpy()
                        ls = torch.log_softmax(t64(x), dim).numpy()
                    g.case('softmax', dt, 'dim=%d' % dim, [xs], s)
                    g.case('log_softmax', dt, 'dim=%d' % dim, [xs], ls)
    # large magnitudes: naive exp would overflow; -inf entries get 0 / -inf
    for dt in ('f32', 'f64'):
        for scale in (1e3, 1e30 if dt == 'f32' else 1e300):
            x = g.values((4, 9), dt, scale)
            xs = g.spec(x, 'c')
            g.case('softmax', dt, 'dim=1', [xs], torch.softmax(t64(x), 1).numpy())
            g.case('log_softmax', dt, 'dim=-1', [xs], torch.log_softmax(t64(x), -1).numpy(),
                   TOL[dt] if scale < 1e10 else 1e-6)
        x = g.values((3, 5), dt)
        x[0, 2] = -np.inf
        x[1, :] = 1e4
        xs = g.spec(x, 'c')
        g.case('softmax', dt, 'dim=1', [xs], torch.softmax(t64(x), 1).numpy())
        g.case('log_softmax', dt, 'dim=1', [xs], torch.log_softmax(t64(x), 1).numpy())
    # a long row (threads split the rows) and errors
    x = g.values((64, 1500), 'f32')
    g.case('softmax', 'f32', 'dim=1', [g.spec(x, 'c')], torch.softmax(t64(x), 1).numpy())
    x = np.zeros((2, 3))
    g.case('softmax', 'f32', 'dim=2', [g.spec(x, 'c')], '!INDEX')
    g.case('log_softmax', 'f32', 'dim=-3', [g.spec(x, 'c')], '!INDEX')


def rms(x, w, eps):
    x = t64(x)
    r = x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)
    return (r * t64(w) if w is not None else r).numpy()


def gen_norms(g):
    shapes = [(4, 16), (2, 3, 8), (5,), (1, 1), (3, 1), (0, 8)]
    for dt in FLOATS:
        for shape in shapes:
            for view in views_for(len(shape)):
                if 0 in shape and view != 'c':
                    continue
                x = g.values(shape, dt, 2.0)
                w = g.values(shape[-1:], dt)
                b = g.values(shape[-1:], dt)
                xs, ws, bs = g.spec(x, view), g.spec(w, 'c'), g.spec(b, 'c')
                for eps in (1e-5, 1e-2):
                    p = 'eps=%r' % eps
                    g.case('rms_norm', dt, p, [xs, ws], rms(x, w, eps))
                    g.case('rms_norm', dt, p, [xs, '-'], rms(x, None, eps))
                    ln = F.layer_norm(t64(x), shape[-1:], t64(w), t64(b), eps).numpy()
                    g.case('layer_norm', dt, p, [xs, ws, bs], ln)
                    ln = F.layer_norm(t64(x), shape[-1:], None, None, eps).numpy()
                    g.case('layer_norm', dt, p, [xs, '-', '-'], ln)
                    ln = F.layer_norm(t64(x), shape[-1:], t64(w), None, eps).numpy()
                    g.case('layer_norm', dt, p, [xs, ws, '-'], ln)
    # large offsets (layer_norm subtracts the mean first; x - mean of values
    # near 1e4 carries 1e4 * 2^-52 of rounding), a long row
    x = g.values((3, 256), 'f64') + 1e4
    g.case('layer_norm', 'f64', 'eps=1e-05', [g.spec(x, 'c'), '-', '-'],
           F.layer_norm(t64(x), (256,), None, None, 1e-5).numpy(), 1e-10)
    x = g.values((8, 4096), 'f32')
    g.case('rms_norm', 'f32', 'eps=1e-06', [g.spec(x, 'c'), '-'], rms(x, None, 1e-6))
    # errors: weight of the wrong size, a scalar, integer dtype
    x = np.zeros((2, 4))
    g.case('rms_norm', 'f32', 'eps=1e-05', [g.spec(x, 'c'), g.spec(np.ones(3), 'c')], '!SHAPE')
    g.case('layer_norm', 'f32', 'eps=1e-05', [g.spec(x, 'c'), '-', g.spec(np.ones((1, 4)), 'c')], '!SHAPE')
    g.case('rms_norm', 'f32', 'eps=1e-05', [g.spec(np.array(1.0), 'c'), '-'], '!SHAPE')


def rope_ref(x, c, s, inter):
    x = np.asarray(x, np.float64)
    d = x.shape[-1]
    out = np.empty_like(x)
    if inter:
        a, b = x[..., 0::2], x[..., 1::2]
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = a * s + b * c
    else:
        a, b = x[..., :d // 2], x[..., d // 2:]
        out[..., :d // 2] = a * c - b * s
        out[..., d // 2:] = a * s + b * c
    return out


def gen_rope(g):
    for dt in FLOATS:
        for (bsz, h, t, d) in [(2, 3, 5, 8), (1, 1, 1, 2), (1, 2, 7, 16)]:
            x = g.values((bsz, h, t, d), dt)
            ang = g.rng.uniform(-3, 3, (t, d // 2))
            c = oc.round_float(np.cos(ang), dt)
            s = oc.round_float(np.sin(ang), dt)
            cs, ss = g.spec(c, 'c'), g.spec(s, 'c')
            for view in ('c', 'p0:2:1:3'):
                xs = g.spec(x, view)   # p0:2:1:3: a (B, T, H, D) tensor viewed as (B, H, T, D)
                for inter in (0, 1):
                    g.case('rope', dt, 'inter=%d' % inter, [xs, cs, ss], rope_ref(x, c, s, inter))
    x = np.zeros((1, 1, 2, 5))
    g.case('rope', 'f32', 'inter=0', [g.spec(x, 'c'), g.spec(np.ones((2, 2)), 'c'), g.spec(np.ones((2, 2)), 'c')],
           '!SHAPE')
    x = np.zeros((1, 1, 2, 4))
    g.case('rope', 'f32', 'inter=1', [g.spec(x, 'c'), g.spec(np.ones((3, 2)), 'c'), g.spec(np.ones((3, 2)), 'c')],
           '!SHAPE')


def sdpa_ref(q, k, v, mask, scale, causal):
    """softmax(q k^T * scale + mask [+ causal]) v in float64 (torch ops).
    Debian's torch 1.13 has only the private
    F._scaled_dot_product_attention (fixed scale 1/sqrt(D), boolean masks):
    where it applies, the formula is checked against it below."""
    q, k, v = t64(q), t64(k), t64(v)
    d = q.shape[-1]
    s = q @ k.transpose(-1, -2) * (scale if scale > 0 else 1.0 / np.sqrt(d))
    if mask is not None:
        s = s + t64(mask)
    if causal:
        keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool).tril()
        s = s.masked_fill(~keep, float('-inf'))
    out = torch.softmax(s, -1) @ v
    if scale == 0 and mask is None and q.dim() >= 3 and hasattr(F, '_scaled_dot_product_attention'):
        with torch.no_grad():
            t = F._scaled_dot_product_attention(q, k, v, None, 0.0, False, bool(causal))[0]
        assert torch.allclose(t, out, rtol=1e-10, atol=1e-12), 'formula disagrees with torch'
    return out.numpy()


def gen_sdpa(g):
    for dt in ('f32', 'f64', 'f16', 'bf16'):
        tol = {'f32': 2e-5, 'f64': 1e-11, 'f16': 1e-2, 'bf16': 6e-2}[dt]
        for (bh, lq, lk, d, dv) in [((2, 3), 5, 7, 8, 6), ((1,), 7, 5, 4, 4), ((2,), 1, 1, 3, 2), ((), 6, 6, 16, 8)]:
            q = g.values(bh + (lq, d), dt)
            k = g.values(bh + (lk, d), dt)
            v = g.values(bh + (lk, dv), dt)
            mask = oc.round_float(g.rng.standard_normal((lq, lk)), dt)
            for kview in ('c', 't'):
                qs, ks, vs = g.spec(q, 'c'), g.spec(k, kview), g.spec(v, 'c')
                ms = g.spec(mask, 'c')
                for causal in (0, 1):
                    for scale in (0.0, 0.3):
                        p = 'scale=%r;causal=%d' % (scale, causal)
                        g.case('sdpa', dt, p, [qs, ks, vs, '-'], sdpa_ref(q, k, v, None, scale, causal), tol)
                    g.case('sdpa', dt, 'scale=0.0;causal=%d' % causal, [qs, ks, vs, ms],
                           sdpa_ref(q, k, v, mask, 0.0, causal), tol)
    q = np.zeros((2, 3, 4))
    g.case('sdpa', 'f32', 'scale=0.0;causal=0', [g.spec(q, 'c'), g.spec(np.zeros((2, 3, 5)), 'c'),
                                                   g.spec(np.zeros((2, 3, 4)), 'c'), '-'], '!SHAPE')


def attention_ref(q, k, v, mask, scale, causal, off, window=0, softcap=0.0):
    """wk_attention in float64 torch ops: kv heads repeated for GQA, the
    scores soft-capped (softcap * tanh(s / softcap)) before the mask, the
    causal rule j <= i + off and the window's i + off - j < window as one
    explicit boolean mask."""
    q, k, v = t64(q), t64(k), t64(v)
    group = q.shape[-3] // k.shape[-3]
    k = k.repeat_interleave(group, dim=-3)
    v = v.repeat_interleave(group, dim=-3)
    d = q.shape[-1]
    s = q @ k.transpose(-1, -2) * (scale if scale > 0 else 1.0 / np.sqrt(d if d else 1))
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    if mask is not None:
        s = s + t64(mask)
    pos = torch.arange(s.shape[-2])[:, None] + off  # each query's position among the keys
    key = torch.arange(s.shape[-1])[None, :]
    keep = torch.ones(s.shape[-2], s.shape[-1], dtype=torch.bool)
    if causal:
        keep &= key <= pos
    if window > 0:
        keep &= pos - key < window
    s = s.masked_fill(~keep, float('-inf'))
    return (torch.softmax(s, -1) @ v).numpy()


ATT_TOL = {'f32': 2e-5, 'f64': 1e-11, 'f16': 1e-2, 'bf16': 6e-2, 'f8e4m3': 0.15}
ALL_FLOATS = FLOATS + ['f8e4m3']


def gen_attention(g):
    # (B, Hq, Hkv, Lq, Lk, D, Dv, causal, off): decode (Lq = 1 at the end of
    # the cache, SmolLM2's 9 / 3 heads of 64), prefill, chunked prefill
    # (Lq < Lk), GQA groups 1 / 3 / 4, head dims 1 3 64 80 128, Lk past the
    # CPU's 128-key tile and not a multiple of it, rows past its 32-row tile
    shapes = [(1, 9, 3, 1, 37, 64, 64, 1, 36), (1, 9, 3, 1, 300, 64, 64, 1, 299),
              (2, 4, 4, 20, 20, 16, 16, 1, 0), (1, 3, 1, 150, 150, 8, 8, 1, 0),
              (1, 4, 1, 5, 133, 32, 32, 1, 128), (2, 6, 2, 3, 10, 80, 80, 0, 0),
              (1, 2, 1, 4, 9, 128, 128, 1, 5), (1, 3, 3, 4, 6, 1, 1, 0, 0), (2, 2, 1, 3, 7, 3, 5, 1, 4),
              (1, 1, 1, 6, 4, 4, 4, 1, 0), (1, 1, 1, 1, 1, 1, 1, 0, 0),
              # decode with head dims that leave vector tails (the per-ISA decode kernels)
              (2, 6, 2, 1, 140, 80, 80, 1, 139), (1, 4, 2, 1, 9, 3, 5, 0, 0), (1, 2, 2, 1, 20, 19, 37, 1, 19)]
    for dt in ALL_FLOATS:
        tol = ATT_TOL[dt]
        for (b, hq, hkv, lq, lk, d, dv, causal, off) in shapes:
            q = g.values((b, hq, lq, d), dt)
            k = g.values((b, hkv, lk, d), dt)
            v = g.values((b, hkv, lk, dv), dt)
            m2 = oc.round_float(g.rng.standard_normal((lq, lk)), dt)
            m4 = oc.round_float(g.rng.standard_normal((b, 1, lq, lk)), dt)
            p = 'scale=0.0;causal=%d;off=%d' % (causal, off)
            # contiguous
            g.case('attention', dt, p, [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'), '-'],
                   attention_ref(q, k, v, None, 0.0, causal, off), tol)
            # k / v narrows of a bigger cache, q permuted from (B, Lq, H, D)
            g.case('attention', dt, p, [g.spec(q, 'p0:2:1:3'), g.spec(k, 'N2:0:5'), g.spec(v, 'N2:2:3'), '-'],
                   attention_ref(q, k, v, None, 0.0, causal, off), tol)
            # k transposed, a (Lq, Lk) mask, another scale
            p3 = 'scale=0.3;causal=%d;off=%d' % (causal, off)
            g.case('attention', dt, p3, [g.spec(q, 'c'), g.spec(k, 't'), g.spec(v, 'n'), g.spec(m2, 'c')],
                   attention_ref(q, k, v, m2, 0.3, causal, off), tol)
            # a (B, 1, Lq, Lk) mask broadcast over the heads
            g.case('attention', dt, p, [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 't'), g.spec(m4, 'c')],
                   attention_ref(q, k, v, m4, 0.0, causal, off), tol)
    for dt in FLOATS:
        tol = ATT_TOL[dt]
        # rows with every key masked: NaN (as torch); a -inf mask on some keys
        q, k, v = g.values((1, 2, 4, 8), dt), g.values((1, 1, 140, 8), dt), g.values((1, 1, 140, 8), dt)
        m = oc.round_float(g.rng.standard_normal((4, 140)), dt)
        m[1, :] = -np.inf
        m[2, :130] = -np.inf
        m[3, 5] = -np.inf
        with np.errstate(all='ignore'):
            want = attention_ref(q, k, v, m, 0.0, 0, 0)
        assert np.isnan(want[0, :, 1]).all() and not np.isnan(want[0, :, 2]).any()
        g.case('attention', dt, 'scale=0.0;causal=0;off=0', [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'),
                                                             g.spec(m, 'c')], want, tol)
        # large scores: the online max keeps exp from overflowing
        q, k = g.values((1, 1, 3, 4), dt, 8.0), g.values((1, 1, 200, 4), dt, 8.0)
        v = g.values((1, 1, 200, 4), dt)
        g.case('attention', dt, 'scale=1.0;causal=1;off=197', [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'), '-'],
               attention_ref(q, k, v, None, 1.0, 1, 197), tol)
        # Lk = 0: zeros; Lq = 0: empty
        q, k, v = g.values((1, 2, 3, 4), dt), g.values((1, 1, 0, 4), dt), g.values((1, 1, 0, 5), dt)
        g.case('attention', dt, 'scale=0.0;causal=0;off=0', [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'), '-'],
               np.zeros((1, 2, 3, 5)), tol)
        q, k, v = g.values((1, 2, 0, 4), dt), g.values((1, 1, 3, 4), dt), g.values((1, 1, 3, 5), dt)
        g.case('attention', dt, 'scale=0.0;causal=1;off=3', [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'), '-'],
               np.zeros((1, 2, 0, 5)), tol)
    # errors: Hkv not dividing Hq, a negative offset, rank 2, a mask that does not broadcast
    z = np.zeros
    g.case('attention', 'f32', 'scale=0.0;causal=0;off=0', [g.spec(z((1, 3, 2, 4)), 'c'), g.spec(z((1, 2, 2, 4)), 'c'),
                                                            g.spec(z((1, 2, 2, 4)), 'c'), '-'], '!SHAPE')
    g.case('attention', 'f32', 'scale=0.0;causal=1;off=-1', [g.spec(z((1, 2, 2, 4)), 'c'),
                                                             g.spec(z((1, 1, 2, 4)), 'c'),
                                                             g.spec(z((1, 1, 2, 4)), 'c'), '-'], '!ARG')
    g.case('attention', 'f32', 'scale=0.0;causal=0;off=0', [g.spec(z((2, 4)), 'c'), g.spec(z((2, 4)), 'c'),
                                                            g.spec(z((2, 4)), 'c'), '-'], '!SHAPE')
    g.case('attention', 'f32', 'scale=0.0;causal=0;off=0', [g.spec(z((1, 2, 2, 4)), 'c'), g.spec(z((1, 1, 3, 4)), 'c'),
                                                            g.spec(z((1, 1, 3, 4)), 'c'), g.spec(z((2, 2)), 'c')],
           '!SHAPE')


def gen_attention_window(g):
    """Sliding window (win=) and logit soft-capping (cap=): Mistral / Gemma 2
    decode over a cache and prefill, GQA, windows 1 / inside / past Lk, with
    and without causal, caps with and without a window, cache narrows."""
    # (B, Hq, Hkv, Lq, Lk, D, causal, off, win, cap, value scale)
    shapes = [(1, 4, 1, 1, 700, 32, 1, 699, 512, 0.0, 1.0),   # decode, window 512 of 700 keys
              (1, 4, 2, 1, 700, 32, 1, 699, 512, 5.0, 3.0),   # the same capped, GQA 2
              (1, 4, 2, 600, 600, 16, 1, 0, 512, 0.0, 1.0),   # prefill
              (1, 4, 1, 40, 300, 16, 1, 260, 100, 2.0, 3.0),  # chunked prefill, window and cap
              (1, 4, 1, 1, 300, 16, 1, 299, 5000, 0.0, 1.0),  # window past Lk: no window
              (1, 2, 1, 7, 50, 8, 1, 43, 1, 0.0, 1.0),        # window 1: each query's own key
              (2, 4, 2, 6, 140, 8, 0, 130, 20, 0.0, 1.0),     # window without causal: the past side only
              (1, 4, 4, 5, 5, 8, 1, 0, 0, 1.5, 4.0),          # cap only
              (1, 2, 1, 3, 10, 8, 1, 20, 4, 0.0, 1.0)]        # offset past Lk: rows see nothing (NaN)
    for dt in FLOATS:
        tol = ATT_TOL[dt]
        for (b, hq, hkv, lq, lk, d, causal, off, win, cap, vs) in shapes:
            q = g.values((b, hq, lq, d), dt, vs)
            k = g.values((b, hkv, lk, d), dt, vs)
            v = g.values((b, hkv, lk, d), dt)
            p = 'scale=0.0;causal=%d;off=%d;win=%d;cap=%r' % (causal, off, win, cap)
            with np.errstate(all='ignore'):
                want = attention_ref(q, k, v, None, 0.0, causal, off, win, cap)
            g.case('attention', dt, p, [g.spec(q, 'c'), g.spec(k, 'c'), g.spec(v, 'c'), '-'], want, tol)
            if lk < 400 or dt == 'f32':
                # k / v narrows of a bigger cache, q permuted; a (Lq, Lk) mask
                m2 = oc.round_float(g.rng.standard_normal((lq, lk)), dt)
                with np.errstate(all='ignore'):
                    want = attention_ref(q, k, v, m2, 0.0, causal, off, win, cap)
                g.case('attention', dt, p, [g.spec(q, 'p0:2:1:3'), g.spec(k, 'N2:0:37'), g.spec(v, 'N2:5:40'),
                                            g.spec(m2, 'c')], want, tol)
    z = np.zeros
    for p in ('scale=0.0;causal=1;off=0;win=-1;cap=0.0', 'scale=0.0;causal=1;off=0;win=0;cap=-1.0'):
        g.case('attention', 'f32', p, [g.spec(z((1, 2, 2, 4)), 'c'), g.spec(z((1, 1, 2, 4)), 'c'),
                                       g.spec(z((1, 1, 2, 4)), 'c'), '-'], '!ARG')


def gen_rope_thd(g):
    for dt in ALL_FLOATS:
        tol = TOL.get(dt, 0.13)
        for (bsz, t, h, d) in [(2, 5, 3, 8), (1, 1, 1, 2), (1, 7, 9, 64)]:
            x = g.values((bsz, t, h, d), dt)
            ang = g.rng.uniform(-3, 3, (t + 4, d // 2))
            c = oc.round_float(np.cos(ang), dt)
            s = oc.round_float(np.sin(ang), dt)
            # cos / sin: rows [2, 2 + t) of a bigger table (positions 2..), x also permuted
            cs, ss = g.spec(c[2:2 + t], 'N0:2:2'), g.spec(s[2:2 + t], 'N0:2:2')
            xt = np.swapaxes(x, 1, 2)  # (B, H, T, D) for the reference
            for view in ('c', 'p0:2:1:3'):
                xs = g.spec(x, view)
                for inter in (0, 1):
                    want = np.swapaxes(rope_ref(xt, c[2:2 + t], s[2:2 + t], inter), 1, 2)
                    g.case('rope_thd', dt, 'inter=%d' % inter, [xs, cs, ss], want, tol)
                    if dt not in FLOATS:
                        continue  # the op table declares rope for FLOAT4
                    # the (B, H, T, D) rope on the same values, with a strided table
                    g.case('rope', dt, 'inter=%d' % inter, [g.spec(xt, 'c'), cs, ss],
                           rope_ref(xt, c[2:2 + t], s[2:2 + t], inter), tol)
    x = np.zeros((1, 2, 1, 4))
    g.case('rope_thd', 'f32', 'inter=0', [g.spec(x, 'c'), g.spec(np.ones((1, 2)), 'c'), g.spec(np.ones((1, 2)), 'c')],
           '!SHAPE')


def silu64(x):
    return x / (1.0 + np.exp(-x))


def gen_swiglu(g):
    for dt in ALL_FLOATS:
        tol = TOL.get(dt, 0.13)
        for shape in [(3, 8), (2, 3, 6), (2,), (1, 1, 2), (4, 1536), (0, 4)]:
            for view in views_for(len(shape)):
                if 0 in shape and view != 'c':
                    continue
                x = g.values(shape, dt, 3.0)
                h = shape[-1] // 2
                with np.errstate(all='ignore'):
                    want = silu64(x[..., :h]) * x[..., h:]
                g.case('swiglu', dt, '-', [g.spec(x, view)], want, tol)
    g.case('swiglu', 'f32', '-', [g.spec(np.zeros((2, 3)), 'c')], '!SHAPE')


ROW_OPS = ('softmax', 'log_softmax', 'rms_norm', 'layer_norm')


def sweep_input(g, shape, dt, lay, scale=1.0):
    """x of this shape on dt, stored so that its spec builds it in layout lay
    (b: a stored size-1 dim 0 broadcast; p: dims 0 and 1 swapped)."""
    if lay == 'b':
        x1 = g.values((1,) + tuple(shape[1:]), dt, scale)
        sp = g.files.save(x1) + '@b' + 'x'.join(str(z) for z in shape)
        g.shape_of[sp] = tuple(shape)
        return np.broadcast_to(x1, shape).copy(), sp
    x = g.values(shape, dt, scale)
    view = {'c': 'c', 'e': 'c', '1': 'c', 't': 't', 'n': 'n',
            'p': 'p' + ':'.join(str(z) for z in [1, 0] + list(range(2, len(shape))))}[lay]
    return x, g.spec(x, view)


def sweep_case(g, op, dt, lay):
    """One case of op on dt in layout lay (a layout it cannot build: none)."""
    if op in ROW_OPS:
        if lay not in ('c', 't', 'n', 'b', 'p', 'e', '1'):
            return
        shape = {'e': (0, 6), '1': (1, 1), 'p': (2, 3, 6)}.get(lay, (3, 6))
        x, xs = sweep_input(g, shape, dt, lay, 2.0)
        if op in ('softmax', 'log_softmax'):
            fn = torch.softmax if op == 'softmax' else torch.log_softmax
            g.case(op, dt, 'dim=-1', [xs], fn(t64(x), -1).numpy())
            return
        w = g.values(shape[-1:], dt)
        ws = g.spec(w, 'c')
        if op == 'rms_norm':
            g.case(op, dt, 'eps=1e-05', [xs, ws], rms(x, w, 1e-5))
        else:
            b = g.values(shape[-1:], dt)
            g.case(op, dt, 'eps=1e-05', [xs, ws, g.spec(b, 'c')],
                   F.layer_norm(t64(x), shape[-1:], t64(w), t64(b), 1e-5).numpy())
    elif op == 'rope':
        if lay not in ('c', 't', 'n', 'p'):
            return
        x, xs = sweep_input(g, (2, 3, 5, 8), dt, lay)
        ang = g.rng.uniform(-3, 3, (5, 4))
        c, s = oc.round_float(np.cos(ang), dt), oc.round_float(np.sin(ang), dt)
        g.case(op, dt, 'inter=0', [xs, g.spec(c, 'c'), g.spec(s, 'c')], rope_ref(x, c, s, 0))
    elif op == 'sdpa':
        if lay not in ('c', 't', 'n', 'p'):
            return
        tol = {'f32': 2e-5, 'f64': 1e-11, 'f16': 1e-2, 'bf16': 6e-2}[dt]
        q, qs = sweep_input(g, (2, 3, 5, 8), dt, lay)
        k, ks = sweep_input(g, (2, 3, 7, 8), dt, lay)
        v = g.values((2, 3, 7, 6), dt)
        g.case(op, dt, 'scale=0.0;causal=1', [qs, ks, g.spec(v, 'c'), '-'], sdpa_ref(q, k, v, None, 0.0, 1), tol)


def sweep(g):
    """One case for every (op, dtype, layout) op_table.def declares for this
    generator's ops that the sections above did not write (appended after
    them, so their cases and random draws stay the same)."""
    oc.sweep('gen_nn', g.covered, lambda name, dt, lay: sweep_case(g, name, dt, lay))


def main():
    if len(sys.argv) != 2:
        print('usage: gen_nn.py OUTDIR', file=sys.stderr)
        return 2
    torch.manual_seed(0)
    g = Gen(sys.argv[1])
    gen_softmax(g)
    gen_norms(g)
    gen_rope(g)
    gen_sdpa(g)
    gen_attention(g)
    gen_attention_window(g)
    gen_rope_thd(g)
    gen_swiglu(g)
    n_sections = len(g.lines)
    sweep(g)
    g.write()
    print('gen_nn: %d cases (%d from the op-table sweep)' % (len(g.lines), len(g.lines) - n_sections))
    return 0


if __name__ == '__main__':
    sys.exit(main())
