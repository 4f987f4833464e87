#!/usr/bin/env python3
"""Oracle for the backward rules of powf / elu / clamp, the reductions
(amax, amin, prod, var, std, logsumexp, vector_norm), the scans (cumsum,
cumprod), sort / topk values, dot / mv and tril / triu: torch autograd
computes the gradients wick must return.

    /usr/bin/python3 tests/oracle/gen_grad_elem.py OUTDIR

writes OUTDIR/grad_elem/manifest.txt and OUTDIR/grad_elem/gNNNNN.npy; read
by tests/test_grad_elem.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of
eight space-separated fields:

    id op dtype params a b r grads

  op      powf | elu | clamp | amax | amin | prod | cumsum | cumprod |
          sort | topk | var | std | lse | norm | dot | mv | tril | triu
  dtype   the dtype wick runs in (inputs are f64 files already on its grid)
  params  k=v pairs joined by ';': e= (powf), alpha= (elu), lo= hi=
          (clamp), dims= ('|'-joined; 'all' for prod over every dim),
          keep=0|1, dim=, desc=0|1, k=, unb=0|1, p= (inf / -inf allowed)
  a, b    input files (b '-' for one-input ops); b is the vector of dot/mv
  r       the weights R: the loss is L = sum(op(a, b) * R)
  grads   dL/da's file, then (two-input ops) '|' and dL/db's
  tol     |got - want| <= tol * (1 + |want|)

torch runs in f64 for f64 cases and in f32 for f32 / f16 / bf16 cases (the
inputs and R on the narrow grid), so the narrow cases measure wick's own
rounding against an exact-ish reference.
"""
import math
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x6E1E
TOL = {'f64': 1e-9, 'f32': 1e-5, 'f16': 4e-3, 'bf16': 3e-2}  # about 4 ulp of each narrow dtype


def distinct(rng, shape, lo=0.3, hi=1.2, signed=True):
    """Values with no ties (a random permutation of an even grid), |v| in [lo, hi]."""
    n = int(np.prod(shape))
    v = lo + (hi - lo) * (rng.permutation(n) + 0.5) / max(n, 1)
    if signed:
        v = v * np.where(rng.random(n) < 0.5, -1.0, 1.0)
    return v.reshape(shape)


def torch_op(op, a, b, p):
    dims = p.get('dims')
    keep = p.get('keep', '0') == '1'
    if op == 'powf':
        return torch.pow(a, float(p['e']))
    if op == 'elu':
        return torch.nn.functional.elu(a, float(p['alpha']))
    if op == 'clamp':
        return torch.clamp(a, float(p['lo']), float(p['hi']))
    if op in ('amax', 'amin'):
        d = tuple(int(x) for x in dims.split('|'))
        return (torch.amax if op == 'amax' else torch.amin)(a, dim=d, keepdim=keep)
    if op == 'prod':
        return torch.prod(a) if dims == 'all' else torch.prod(a, int(dims), keepdim=keep)
    if op in ('cumsum', 'cumprod'):
        return getattr(torch, op)(a, int(p['dim']))
    if op == 'sort':
        return torch.sort(a, dim=int(p['dim']), descending=p['desc'] == '1', stable=True).values
    if op == 'topk':
        return torch.topk(a, int(p['k']), int(p['dim']), largest=p['desc'] == '1').values
    if op in ('var', 'std'):
        d = tuple(int(x) for x in dims.split('|'))
        return getattr(torch, op)(a, d, unbiased=p['unb'] == '1', keepdim=keep)
    if op == 'lse':
        d = tuple(int(x) for x in dims.split('|'))
        return torch.logsumexp(a, d, keepdim=keep)
    if op == 'norm':
        d = tuple(int(x) for x in dims.split('|'))
        return torch.linalg.vector_norm(a, float(p['p']), d, keepdim=keep)
    if op == 'dot':
        return torch.dot(a, b)
    if op == 'mv':
        return torch.mv(a, b)
    if op in ('tril', 'triu'):
        return getattr(torch, op)(a, int(p['k']))
    raise ValueError(op)


def main():
    out = os.path.join(sys.argv[1], 'grad_elem')
    files = oc.NpyFiles(out, 'g')
    rng = np.random.default_rng(SEED)
    lines = []

    def case(op, params, a, b=None, dtypes=('f64', 'f32', 'f16', 'bf16')):
        p = dict(kv.split('=', 1) for kv in params.split(';')) if params else {}
        for dt in dtypes:
            tdt = torch.float64 if dt == 'f64' else torch.float32
            ag = oc.round_float(a, dt)
            ta = torch.tensor(ag, dtype=tdt, requires_grad=True)
            tb = None
            if b is not None:
                bg = oc.round_float(b, dt)
                tb = torch.tensor(bg, dtype=tdt, requires_grad=True)
            y = torch_op(op, ta, tb, p)
            r = oc.round_float(rng.uniform(-1, 1, tuple(y.shape)), dt)
            (y * torch.tensor(r, dtype=tdt)).sum().backward()
            fa = files.save(ag)
            fb = files.save(bg) if b is not None else '-'
            fr = files.save(r)
            gs = files.save(ta.grad.double().numpy())
            if b is not None:
                gs += '|' + files.save(tb.grad.double().numpy())
            lines.append('%d %s %s %s %s %s %s %s %g' % (len(lines), op, dt, params or '-', fa, fb, fr, gs, TOL[dt]))

    x34 = distinct(rng, (3, 4))
    pos34 = distinct(rng, (3, 4), signed=False)
    for e in ('2', '3', '0.5', '-1.5', '0', '1'):
        case('powf', 'e=' + e, pos34 if float(e) % 1 else x34)
    for al in ('1', '0.5'):
        case('elu', 'alpha=' + al, x34)
    case('clamp', 'lo=-0.5;hi=0.6', x34)
    case('clamp', 'lo=-0.5;hi=0.5', np.array([-1.0, -0.5, 0.0, 0.5, 1.0]))  # on the bounds: passes
    x345 = distinct(rng, (3, 4, 5))
    tie = np.array([[1.0, 3.0, 3.0, 2.0], [-1.0, -1.0, -1.0, 0.5], [4.0, 0.0, 4.0, 4.0]])
    for op in ('amax', 'amin'):
        for dims, keep in (('0', '0'), ('-1', '1'), ('0|2', '0'), ('1|-1', '1'), ('0|1|2', '0')):
            case(op, 'dims=%s;keep=%s' % (dims, keep), x345)
        for dims in ('1', '0', '0|1'):
            case(op, 'dims=%s;keep=0' % dims, tie)
    zeros = np.array([[2.0, 0.0, 3.0, 0.5], [0.0, 0.0, 3.0, 1.5], [2.0, 4.0, 3.0, -1.0]])
    for dims, keep in (('0', '0'), ('-1', '1'), ('1', '0'), ('all', '0')):
        case('prod', 'dims=%s;keep=%s' % (dims, keep), x34 * 1.5)
        case('prod', 'dims=%s;keep=%s' % (dims, keep), zeros, dtypes=('f64', 'f32', 'f16'))
    czero = np.array([[2.0, 0.0, 3.0, 4.0, 0.5], [0.0, 2.0, 0.0, 3.0, 1.0], [1.5, -1.0, 0.5, 2.0, 0.0]])
    for dim in ('0', '1', '-1'):
        case('cumsum', 'dim=' + dim, x345)
        case('cumprod', 'dim=' + dim, x345 * 1.3)
    for dim in ('0', '1'):
        case('cumprod', 'dim=' + dim, czero)
    for dim, desc in (('0', '0'), ('-1', '1'), ('1', '0')):
        case('sort', 'dim=%s;desc=%s' % (dim, desc), x345)
    for k, dim, desc in (('2', '-1', '1'), ('1', '0', '0'), ('3', '1', '1')):
        case('topk', 'k=%s;dim=%s;desc=%s' % (k, dim, desc), x345)
    for op in ('var', 'std'):
        for dims, keep, unb in (('0', '0', '1'), ('-1', '1', '0'), ('0|2', '0', '1'), ('0|1|2', '1', '1')):
            case(op, 'dims=%s;keep=%s;unb=%s' % (dims, keep, unb), x345)
    for dims, keep in (('0', '0'), ('-1', '1'), ('0|2', '0')):
        case('lse', 'dims=%s;keep=%s' % (dims, keep), x345 * 3)
    for pv in ('2', '1', '3', '1.5', '0.5', 'inf', '-inf', '-1'):
        for dims, keep in (('-1', '0'), ('0|2', '1')):
            case('norm', 'p=%s;dims=%s;keep=%s' % (pv, dims, keep), x345)
    case('norm', 'p=inf;dims=1;keep=0', tie)
    case('dot', '', distinct(rng, (7,)), distinct(rng, (7,)))
    case('mv', '', distinct(rng, (3, 5)), distinct(rng, (5,)))
    for op in ('tril', 'triu'):
        for k in ('0', '1', '-2'):
            case(op, 'k=' + k, x345)

    oc.write_manifest(out, ['id op dtype params a b r grads tol (see gen_grad_elem.py)'], lines)
    print('gen_grad_elem: %d cases' % len(lines))


if __name__ == '__main__':
    main()
