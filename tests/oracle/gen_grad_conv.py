#!/usr/bin/env python3
"""wick gradient oracle for convolutions, pools and upsampling: PyTorch
autograd in float64 computes the gradients wick's backward must return.

    /usr/bin/python3 tests/oracle/gen_grad_conv.py OUTDIR

writes OUTDIR/grad_conv/manifest.txt and OUTDIR/grad_conv/gNNNNN.npy only.
tests/test_grad_conv.c reads them (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case with 10
fields separated by single spaces:

    id kind dtype params x w r dx dw tol

  kind    conv1d | conv2d | conv_transpose1d | conv_transpose2d | max_pool2d |
          avg_pool2d | nearest1d | nearest2d | bilinear2d
  dtype   f32 | f64 | f16 | bf16 (inputs are f64 values on that dtype's grid)
  params  k=v;k=v: convs s, p, d, g, op (stride, padding, dilation, groups,
          output_padding); pools k, s, p as H:W and cip (0/1); upsampling
          o (H:W or L) and ac (0/1)
  x, w    FILE[@VIEW] as ou_load_input reads them (w '-' for one-input ops)
  r       the output gradient (f64 values on the dtype's grid): wick runs
          wk_backward with grad_output r
  dx, dw  torch's f64 gradients from the rounded inputs ('-': none)
  tol     AX:AW:R: |got - want| <= A + R * |want| with A = AX for dx, AW for
          dw (3 * K * u * max of the same gradient of |x|, |w|, |r|; K the
          reduction length, u the unit roundoff of the compute type), R two
          ulps of f16 / bf16 or 0.
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x6C0D
OUT = os.path.join(sys.argv[1], 'grad_conv')
FILES = oc.NpyFiles(OUT, 'g')
rng = np.random.default_rng(SEED)
lines = []
U = {'f64': 2.0 ** -53, 'f32': 2.0 ** -24, 'f16': 2.0 ** -24, 'bf16': 2.0 ** -24}
R_ULP = {'f16': 2.0 ** -9, 'bf16': 2.0 ** -6}
A_SUB = {'f16': 2.0 ** -23, 'bf16': 2.0 ** -132}


def save(a):
    return FILES.save(np.asarray(a, dtype=np.float64))


def stored(x, variant):
    """(what to store, the view spec suffix that gives x back)"""
    if variant == 'c':
        return x, ''
    if variant == 't':
        return np.swapaxes(x, -1, -2), '@t'
    if variant == 'p':  # channels last
        perm = [0] + list(range(2, x.ndim)) + [1]
        back = [0, x.ndim - 1] + list(range(1, x.ndim - 1))
        return np.transpose(x, perm), '@p' + ':'.join(str(v) for v in back)
    raise ValueError(variant)


def grads(fn, x, w, r):
    xt = torch.from_numpy(x).requires_grad_(True)
    ins = [xt]
    wt = None
    if w is not None:
        wt = torch.from_numpy(w).requires_grad_(True)
        ins.append(wt)
    y = fn(*ins)
    gs = torch.autograd.grad(y, ins, torch.from_numpy(r))
    return [g.detach().numpy() for g in gs], y.shape


def emit(kind, dt, params, x, w, fn, kx, kw, variant='c', r=None):
    x = oc.round_float(x, dt)
    if w is not None:
        w = oc.round_float(w, dt)
    with torch.no_grad():
        yshape = fn(torch.from_numpy(x), *([torch.from_numpy(w)] if w is not None else [])).shape
    if r is None:
        r = oc.round_float(rng.standard_normal(tuple(yshape)), dt)
    g, _ = grads(fn, x, w, r)
    # the same gradients of |x|, |w|, |r| bound every partial sum (max pool:
    # a copy of r's entries, bounded by |r| summed over the windows)
    gb, _ = grads(fn, np.abs(x) if kind != 'max_pool2d' else x, np.abs(w) if w is not None else None, np.abs(r))
    u = U[dt]
    ax = 3.0 * max(kx, 1) * u * (float(np.abs(gb[0]).max()) if gb[0].size else 0.0) + A_SUB.get(dt, 0.0) + 1e-300
    aw = 0.0
    if w is not None:
        aw = 3.0 * max(kw, 1) * u * (float(np.abs(gb[1]).max()) if gb[1].size else 0.0) + A_SUB.get(dt, 0.0) + 1e-300
    rt = R_ULP.get(dt, 0.0)
    xs, xv = stored(x, variant)
    cid = '%04d.%s.%s.%s' % (len(lines), kind, dt, variant)
    lines.append(' '.join([cid, kind, dt, params, save(xs) + xv, save(w) if w is not None else '-', save(r),
                           save(g[0]), save(g[1]) if w is not None else '-', '%r:%r:%r' % (ax, aw, rt)]))


CONV = {'conv1d': F.conv1d, 'conv2d': F.conv2d, 'conv_transpose1d': F.conv_transpose1d,
        'conv_transpose2d': F.conv_transpose2d}


def conv_case(op, dt, variant, g, s, d, p, n, cpi, cpo, sizes, ks, opad=0):
    tr = op.startswith('conv_transpose')
    cin, cout = g * cpi, g * cpo
    x = rng.standard_normal((n, cin) + tuple(sizes))
    w = rng.standard_normal(((cin, cpo) if tr else (cout, cpi)) + tuple(ks))
    kw = dict(stride=s, padding=p, dilation=d, groups=g)
    if tr:
        kw['output_padding'] = opad
    with torch.no_grad():
        y = CONV[op](torch.from_numpy(x), torch.from_numpy(w), **kw)
    kprod = int(np.prod(ks))
    kx = cpo * kprod if not tr else cpo * kprod   # dx sums over out channels of a group x kernel
    kw_len = n * int(np.prod(y.shape[2:])) if not tr else n * int(np.prod(sizes))
    emit(op, dt, 's=%d;p=%d;d=%d;g=%d;op=%d' % (s, p, d, g, opad), x, w,
         lambda a, b: CONV[op](a, b, **kw), kx, kw_len, variant)


DTS = ['f64', 'f32', 'f16', 'bf16']
# a fixed grid: every parameter at 1 and 2, odd sizes, batch 1 and 3, layouts
i = 0
for op in ['conv1d', 'conv2d', 'conv_transpose1d', 'conv_transpose2d']:
    two = op.endswith('2d')
    tr = op.startswith('conv_transpose')
    for g in (1, 2):
        for s in (1, 2):
            for d in (1, 2):
                for p in (0, 1):
                    dt = DTS[i % 4]
                    variant = ['c', 't', 'p'][i % 3]
                    n = 1 if i % 2 else 3
                    ks = (3, 2) if two else (3,)
                    sizes = (7, 6) if two else (9,)
                    opad = (i % max(s, d)) if tr else 0
                    conv_case(op, dt, variant, g, s, d, p, n, 2, 3 if g == 1 else 2, sizes, ks, opad)
                    i += 1
# the digits CNN's shapes in every dtype
for dt in DTS:
    conv_case('conv2d', dt, 'c', 1, 1, 1, 1, 4, 1, 16, (8, 8), (3, 3))
    conv_case('conv2d', dt, 'c', 1, 1, 1, 0, 4, 16, 2, (4, 4), (3, 3))

# f32 convs that keep the map size (stride 1, "same" padding): the CPU's
# shifted-row paths for the forward, dx and dw (cpu_conv.c); groups,
# dilation, 1-d, batch 1, odd sizes, layouts
for j, (g, d, p, ks, sizes, n) in enumerate([(1, 1, 1, (3, 3), (5, 7), 3), (2, 1, 1, (3, 3), (4, 4), 1),
                                            (1, 2, 2, (3, 3), (6, 5), 2), (1, 1, 2, (5, 5), (3, 4), 2),
                                            (1, 1, 1, (3,), (11,), 2), (2, 1, 0, (1, 1), (3, 5), 2)]):
    op = 'conv2d' if len(ks) == 2 else 'conv1d'
    conv_case(op, 'f32', ['c', 't', 'p'][j % 3], g, 1, d, p, n, 2, 3, sizes, ks)
    conv_case(op, 'f32', 'c', g, 1, d, p, n, 3, 2, sizes, ks)

def pool_case(kind, dt, k, s, p, cip, x, variant='c'):
    if kind == 'max_pool2d':
        fn = lambda a: F.max_pool2d(a, k, s, p)  # noqa: E731
        kx = k[0] * k[1]
    else:
        fn = lambda a: F.avg_pool2d(a, k, s, p, count_include_pad=bool(cip))  # noqa: E731
        kx = k[0] * k[1]
    emit(kind, dt, 'k=%d:%d;s=%d:%d;p=%d:%d;cip=%d' % (k + s + p + (cip,)), x, None, fn, kx, 0, variant)


POOLS = [((2, 2), (2, 2), (0, 0)), ((3, 3), (2, 2), (1, 1)), ((3, 2), (1, 2), (1, 0)), ((2, 3), (3, 1), (0, 1)),
         ((3, 3), (1, 1), (0, 0)), ((2, 2), (3, 3), (1, 1))]
for j, (k, s, p) in enumerate(POOLS):
    for dt in DTS:
        x = rng.standard_normal((2, 3, 7, 8))
        tie = np.round(x * 2) / 2  # many ties: the first maximum of each window gets it
        variant = ['c', 't', 'p'][j % 3]
        pool_case('max_pool2d', dt, k, s, p, 0, tie, variant)
        pool_case('avg_pool2d', dt, k, s, p, j % 2, x, variant)
        pool_case('avg_pool2d', dt, k, s, p, 1 - j % 2, x, 'c')
for dt in ('f32', 'f64'):  # NaN windows: torch sends the gradient to the last NaN of the window
    x = rng.standard_normal((1, 2, 6, 6))
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 1, 2] = np.nan
    x[0, 1, 4, 3] = np.nan
    pool_case('max_pool2d', dt, (3, 3), (2, 2), (1, 1), 0, x)
    pool_case('max_pool2d', dt, (2, 2), (1, 1), (0, 0), 0, x)
# 2x2 / 2 max pool (the f32 select kernels): ties, NaN (first / later / two
# in one window), -inf windows, an odd edge, layouts
for j, shape in enumerate([(2, 3, 8, 8), (1, 2, 7, 9), (3, 1, 4, 6)]):
    x = np.round(rng.standard_normal(shape) * 2) / 2
    x.flat[0] = np.nan
    x.flat[5] = np.nan
    x.flat[shape[-1] + 5] = np.nan
    x[..., 2:4, 0:2] = -np.inf
    if shape[-1] > 4:
        x[..., 2, 3] = np.nan
    pool_case('max_pool2d', 'f32', (2, 2), (2, 2), (0, 0), 0, x, ['c', 't', 'p'][j])
    pool_case('max_pool2d', 'f64', (2, 2), (2, 2), (0, 0), 0, x, ['c', 't', 'p'][j])

UPS = [(3, 4, 6, 8), (5, 7, 3, 4), (4, 5, 9, 7), (6, 6, 6, 6), (2, 3, 5, 2), (1, 4, 3, 1)]
for j, (h, w, oh, ow) in enumerate(UPS):
    for dt in DTS:
        variant = ['c', 't', 'p'][j % 3]
        x = rng.standard_normal((2, 3, h, w))
        emit('nearest2d', dt, 'o=%d:%d;ac=0' % (oh, ow), x, None,
             lambda a: F.interpolate(a, size=(oh, ow), mode='nearest'), oh * ow, 0, variant)
        for ac in (0, 1):
            emit('bilinear2d', dt, 'o=%d:%d;ac=%d' % (oh, ow, ac), x, None,
                 lambda a: F.interpolate(a, size=(oh, ow), mode='bilinear', align_corners=bool(ac)), oh * ow * 4, 0,
                 variant)
        x1 = rng.standard_normal((2, 3, w))
        emit('nearest1d', dt, 'o=%d;ac=0' % ow, x1, None, lambda a: F.interpolate(a, size=ow, mode='nearest'),
             ow, 0, ['c', 'p'][j % 2])

oc.write_manifest(OUT, [' wick grad_conv oracle (tests/oracle/gen_grad_conv.py); format in its docstring'], lines)
print('grad_conv: %d cases' % len(lines))
