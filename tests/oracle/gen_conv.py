#!/usr/bin/env python3
"""wick conv oracle: torch.nn.functional.conv1d / conv2d / conv_transpose1d /
conv_transpose2d in float64 compute what wick must return.

    /usr/bin/python3 tests/oracle/gen_conv.py OUTDIR

writes OUTDIR/conv/manifest.txt and OUTDIR/conv/cNNNNN.npy only.
tests/test_oracle_conv.c reads them (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case with 13
fields separated by single spaces:

    id op dtype variant stride padding dilation groups output_padding x w expected atol_rtol

  op        conv1d | conv2d | conv_transpose1d | conv_transpose2d
  dtype     f32 | f64 | f16 | bf16 (inputs are stored as f64 values already on
            that dtype's grid and converted with wk_to_dtype, which is exact)
  variant   how x is viewed: c (as stored), t (stored with its last two dims
            swapped: wick transposes back), n (stored with 3 extra elements on
            the last dim: wick narrows [1, 1+len)), p (stored as N,H..,C
            channels-last: wick permutes to N,C,H..), b (stored with a batch
            of 1: wick broadcasts it to the expected result's batch)
  expected  f64 npy computed by torch in float64 from the rounded inputs,
            then rounded to the case dtype
  atol_rtol 'A:R': |got - want| <= A + R * |want|. A = 3 * K * u * max
            sum|x||w| (K = reduction length, u = f32 / f64 unit roundoff),
            R = one ulp of the output dtype (f16, bf16; plus its smallest
            subnormal in A) or 0.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0xC0417
OUT = os.path.join(sys.argv[1], 'conv')
FILES = oc.NpyFiles(OUT, 'c')
rng = np.random.default_rng(SEED)
lines = []


def save(arr):
    return FILES.save(np.asarray(arr, dtype=np.float64))


def to_grid(a, dt):
    return oc.round_float(a, dt)


def round_out(a, dt):
    return to_grid(a, dt)


FN = {'conv1d': F.conv1d, 'conv2d': F.conv2d, 'conv_transpose1d': F.conv_transpose1d,
      'conv_transpose2d': F.conv_transpose2d}


def add(op, dt, variant, x, w, stride, padding, dilation, groups, outpad):
    if variant == 'b':   # every batch entry the same: stored once, broadcast by wick
        x = np.repeat(x[:1], x.shape[0], axis=0)
    x = to_grid(x, dt)
    w = to_grid(w, dt)
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    if op.startswith('conv_transpose'):
        kw['output_padding'] = outpad
    xt, wt = torch.from_numpy(x), torch.from_numpy(w)
    y = FN[op](xt, wt, **kw).numpy()
    bound = FN[op](xt.abs(), wt.abs(), **kw).numpy()
    if op.startswith('conv_transpose'):
        k = (w.shape[0] // groups) * int(np.prod(w.shape[2:]))
    else:
        k = int(np.prod(w.shape[1:]))
    u = 2.0 ** -53 if dt == 'f64' else 2.0 ** -24
    atol = 3.0 * max(k, 1) * u * (float(bound.max()) if bound.size else 0.0) + 1e-300
    # f16 / bf16: the f32 accumulation error can move the single final
    # rounding by one step of the output grid (one ulp, relative or subnormal)
    rtol = {'f16': 2.0 ** -10, 'bf16': 2.0 ** -7}.get(dt, 0.0) * 1.001
    atol += {'f16': 2.0 ** -24, 'bf16': 2.0 ** -133}.get(dt, 0.0)
    want = round_out(y, dt)
    if variant == 'c':
        xs = x
    elif variant == 't':
        xs = np.swapaxes(x, -1, -2)
    elif variant == 'n':
        pad = [(0, 0)] * (x.ndim - 1) + [(1, 2)]
        xs = np.pad(x, pad, constant_values=7.0)
    elif variant == 'p':
        xs = np.moveaxis(x, 1, -1)
    elif variant == 'b':
        xs = x[:1]
    else:
        raise ValueError(variant)
    cid = '%04d.%s.%s.%s' % (len(lines), op, dt, variant)
    lines.append(' '.join(str(v) for v in [
        cid, op, dt, variant, stride, padding, dilation, groups, outpad, save(xs), save(w), save(want),
        '%r:%r' % (atol, rtol)]))


def rnd(shape):
    return rng.standard_normal(shape)


DTS = ['f32', 'f64', 'f16', 'bf16']
VARS = ['c', 't', 'n', 'p']


def random_case(op, dt=None, variant=None):
    two = op.endswith('2d')
    tr = op.startswith('conv_transpose')
    groups = int(rng.choice([1, 1, 2, 4]))
    cpg_in = int(rng.integers(1, 4))
    cpg_out = int(rng.integers(1, 4))
    if rng.random() < 0.15:  # depthwise
        groups = int(rng.choice([2, 3, 4]))
        cpg_in, cpg_out = 1, int(rng.choice([1, 2]))
    cin, cout = groups * cpg_in, groups * cpg_out
    stride = int(rng.integers(1, 4))
    dilation = int(rng.integers(1, 3))
    padding = int(rng.integers(0, 3))
    ks = [int(rng.choice([1, 3, 5]))] * (2 if two else 1)
    if two and rng.random() < 0.3:
        ks[1] = int(rng.choice([1, 3, 5]))
    n = int(rng.integers(1, 4))
    sp = []
    for k in ks:
        lo = 1 if tr else max(1, dilation * (k - 1) + 1 - 2 * padding)
        sp.append(int(rng.integers(lo, lo + 9)))
    outpad = 0
    if tr:
        mx = max(stride, dilation)
        outpad = int(rng.integers(0, mx))
        # keep the output size >= 1
        for i, k in enumerate(ks):
            while (sp[i] - 1) * stride - 2 * padding + dilation * (k - 1) + outpad + 1 < 1:
                sp[i] += 1
    x = rnd([n, cin] + sp)
    w = rnd(([cin, cpg_out] if tr else [cout, cpg_in]) + ks)
    dt = dt or DTS[int(rng.integers(0, 4))]
    variant = variant or VARS[int(rng.integers(0, 4))]
    add(op, dt, variant, x, w, stride, padding, dilation, groups, outpad)


OPS = ['conv1d', 'conv2d', 'conv_transpose1d', 'conv_transpose2d']
# every op x dtype x variant once, then random combinations
for op in OPS:
    for dt in DTS:
        for v in VARS:
            random_case(op, dt, v)
for i in range(160):
    random_case(OPS[i % 4])

# fixed shapes: 1x1 (the GEMM-only path), one element, empty batch, ResNet-like
for dt in DTS:
    for v in VARS:
        add('conv2d', dt, v, rnd([2, 6, 5, 7]), rnd([4, 6, 1, 1]), 1, 0, 1, 1, 0)
        add('conv2d', dt, v, rnd([2, 6, 5, 7]), rnd([4, 3, 1, 1]), 1, 0, 1, 2, 0)
        add('conv1d', dt, v, rnd([2, 6, 9]), rnd([4, 6, 1]), 1, 0, 1, 1, 0)
add('conv2d', 'f32', 'c', rnd([1, 1, 1, 1]), rnd([1, 1, 1, 1]), 1, 0, 1, 1, 0)
add('conv1d', 'f32', 'c', rnd([1, 1, 1]), rnd([1, 1, 1]), 1, 0, 1, 1, 0)
add('conv_transpose2d', 'f32', 'c', rnd([1, 1, 1, 1]), rnd([1, 1, 1, 1]), 1, 0, 1, 1, 0)
add('conv_transpose1d', 'f64', 'c', rnd([1, 1, 1]), rnd([1, 1, 1]), 1, 0, 1, 1, 0)
add('conv2d', 'f32', 'c', rnd([0, 4, 5, 5]), rnd([2, 4, 3, 3]), 1, 1, 1, 1, 0)
add('conv_transpose2d', 'f32', 'c', rnd([0, 4, 5, 5]), rnd([4, 2, 3, 3]), 2, 1, 1, 1, 1)
add('conv1d', 'f64', 'c', rnd([0, 2, 5]), rnd([3, 2, 3]), 1, 0, 1, 1, 0)
# padding larger than needed: output columns made only of padding
add('conv2d', 'f64', 'c', rnd([1, 2, 2, 3]), rnd([3, 2, 1, 1]), 1, 2, 1, 1, 0)
add('conv1d', 'f32', 't', rnd([2, 3, 4]), rnd([2, 3, 3]), 3, 2, 2, 1, 0)
# larger: thread pool, im2col / col2im in parallel, pairs in parallel (depthwise)
add('conv2d', 'f32', 'c', rnd([2, 32, 20, 18]), rnd([48, 32, 3, 3]), 1, 1, 1, 1, 0)
add('conv2d', 'f32', 'p', rnd([2, 32, 20, 18]), rnd([48, 32, 3, 3]), 2, 1, 1, 1, 0)
add('conv2d', 'bf16', 'c', rnd([1, 16, 24, 24]), rnd([16, 16, 3, 3]), 1, 1, 1, 1, 0)
add('conv2d', 'f32', 'n', rnd([3, 32, 16, 16]), rnd([32, 1, 3, 3]), 1, 1, 1, 32, 0)
add('conv_transpose2d', 'f32', 'c', rnd([2, 32, 12, 12]), rnd([32, 24, 3, 3]), 2, 1, 1, 1, 1)
add('conv_transpose2d', 'f64', 't', rnd([2, 32, 12, 12]), rnd([32, 6, 4, 4]), 2, 1, 1, 4, 0)
add('conv_transpose2d', 'f16', 'c', rnd([2, 16, 10, 10]), rnd([16, 1, 3, 3]), 1, 1, 2, 16, 1)
add('conv1d', 'f32', 'c', rnd([2, 64, 300]), rnd([64, 64, 5]), 1, 2, 1, 1, 0)
add('conv_transpose1d', 'f32', 'n', rnd([2, 64, 300]), rnd([64, 32, 5]), 2, 2, 1, 2, 1)

# f32 "same" geometry (stride 1, map size kept: cpu_conv.c im2col_same /
# col2im_same, image blocks of one GEMM) and kernel-covers-the-map convs
# (the weight gradient's swapped conv: small_out), batch 1 and many, groups,
# dilation, 1-d, odd sizes, strided inputs
for v in VARS + ['b']:
    add('conv2d', 'f32', v, rnd([3, 4, 5, 7]), rnd([6, 2, 3, 3]), 1, 1, 1, 2, 0)
    add('conv2d', 'f32', v, rnd([1, 3, 6, 5]), rnd([4, 3, 3, 3]), 1, 2, 2, 1, 0)
    add('conv_transpose2d', 'f32', v, rnd([3, 4, 5, 7]), rnd([4, 3, 3, 3]), 1, 1, 1, 2, 0)
    add('conv_transpose2d', 'f32', v, rnd([40, 8, 4, 4]), rnd([8, 6, 3, 3]), 1, 1, 1, 1, 0)
    add('conv1d', 'f32', v, rnd([2, 3, 11]), rnd([5, 3, 5]), 1, 2, 1, 1, 0)
    add('conv_transpose1d', 'f32', v, rnd([2, 4, 11]), rnd([4, 5, 3]), 1, 1, 1, 1, 0)
    add('conv2d', 'f32', v, rnd([1, 32, 8, 8]), rnd([16, 32, 8, 8]), 1, 1, 1, 1, 0)
    add('conv2d', 'f32', v, rnd([3, 6, 5, 4]), rnd([4, 3, 5, 4]), 1, 2, 1, 2, 0)
    add('conv1d', 'f32', v, rnd([2, 5, 9]), rnd([3, 5, 9]), 1, 3, 1, 1, 0)
add('conv2d', 'f32', 'c', rnd([64, 16, 4, 4]), rnd([32, 16, 3, 3]), 1, 1, 1, 1, 0)
add('conv2d', 'f32', 'c', rnd([16, 64, 4, 4]), rnd([32, 64, 4, 4]), 1, 1, 1, 1, 0)
add('conv_transpose2d', 'f32', 'c', rnd([0, 4, 5, 5]), rnd([4, 2, 3, 3]), 1, 1, 1, 1, 0)
add('conv2d', 'f32', 'c', rnd([0, 3, 4, 4]), rnd([2, 3, 4, 4]), 1, 1, 1, 1, 0)

# the op-table sweep: one case for every (op, dtype, layout) op_table.def
# declares for these ops that the cases above did not write
SWEEP = {  # op: (x shape, w shape, stride, padding, dilation, groups, output_padding)
    'conv1d': ([3, 4, 11], [6, 4, 3], 1, 1, 1, 1, 0),
    'conv2d': ([3, 4, 7, 8], [6, 4, 3, 3], 1, 1, 1, 1, 0),
    'conv_transpose1d': ([3, 4, 9], [4, 5, 3], 2, 1, 1, 1, 1),
    'conv_transpose2d': ([3, 4, 5, 6], [4, 5, 3, 3], 2, 1, 1, 1, 1),
}
n_sections = len(lines)
covered = {tuple(ln.split()[1:4]) for ln in lines}


def sweep_case(name, dt, lay):
    if name in SWEEP and lay in ('c', 't', 'n', 'p', 'b'):
        xs, ws, st, pd, dl, gr, op_ = SWEEP[name]
        add(name, dt, lay, rnd(xs), rnd(ws), st, pd, dl, gr, op_)
        covered.add((name, dt, lay))


oc.sweep('gen_conv', covered, sweep_case)

oc.write_manifest(OUT, [' wick conv oracle, seed %#x, %d cases' % (SEED, len(lines))], lines)
print('gen_conv: %d cases in %s (%d of them from the op-table sweep)' % (len(lines), OUT, len(lines) - n_sections))
