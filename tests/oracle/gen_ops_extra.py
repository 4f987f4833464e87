#!/usr/bin/env python3
"""Oracle for the composite ops of wick.h's "more ops" section: round_to,
norm, dot, mv, tril, triu, meshgrid, slice_assign(_), and upsampling by a
scale factor. numpy / torch compute what wick must return.

    /usr/bin/python3 tests/oracle/gen_ops_extra.py OUTDIR

writes only OUTDIR/ops_extra/manifest.txt and OUTDIR/ops_extra/xNNNNN.npy;
read by tests/test_oracle_ops_extra.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of six
space-separated fields:

    id op dtype inputs params expected tol

  op       round_to | norm | dot | mv | tril | triu | meshgrid |
           slice_assign | slice_assign_ | upsample_nearest1d_scale |
           upsample_nearest2d_scale | upsample_bilinear2d_scale
  dtype    wick dtype name every input is converted to (inputs are stored
           as f64 / i64 and already on that dtype's grid)
  inputs   ','-joined FILE[@VIEW] (tests/oracle_util.h's ou_load_input: the
           view is a '+'-joined chain of c, t (transpose of the last two
           dims), nD:S:L (narrow), bSHAPE (broadcast_as), pA:B:.. (permute))
  params   k=v pairs joined by ';' ('-' for none): dec= (round_to), p=,
           dims= ('|'-joined), keep=0|1 (norm), k= (tril/triu), idx=ij|xy
           (meshgrid), starts= ends= steps= ('|'-joined; slice_assign),
           s= / sh= sw= / ac=0|1 (upsampling)
  expected ','-joined FILEs (f64 or i64; one per output) or !STATUS: the
           call must fail with that status
  tol      |got - want| <= tol * (1 + |want|); 0 means exactly equal (NaN
           must match NaN, inf the same inf)

round_to's expectation models wick's documented arithmetic exactly
(candle's round(x * 10^d) * (1 / 10^d) in the dtype, round half away from
zero); the scale-factor upsampling comes from torch 1.13's
F.interpolate(scale_factor=..., recompute_scale_factor=None) run with
C = 3 channels (its general kernels; see src/autograd/tracked_upsample_scale.c).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x0E47A
INTS = oc.INTS
FLOATS = ['f32', 'f64', 'f16', 'bf16']
ALL = INTS + FLOATS + ['f8e4m3']
F8_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, -0.5, -2.0, 448.0, -448.0, 0.015625]
TOL = {'f64': 1e-12, 'f32': 3e-6, 'f16': 2e-3, 'bf16': 1.6e-2, 'f8e4m3': 0.13}


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'ops_extra')
        self.files = oc.NpyFiles(self.dir, 'x')
        self.lines = []
        self.rng = np.random.default_rng(SEED)
        self.saved = {}
        self.covered = set()   # (op, dtype, layout) of the cases that must succeed

    def values(self, shape, dt, kind='normal'):
        r = self.rng
        n = int(np.prod(shape)) if len(shape) else 1
        if dt == 'f8e4m3':
            return np.array(r.choice(F8_GRID, n), np.float64).reshape(shape)
        if dt in INTS:
            lo, hi = (0, 100) if dt in ('u8', 'u32') else (-50, 50)
            return r.integers(lo, hi, n).astype(np.int64).reshape(shape)
        if kind == 'small':
            v = r.uniform(-1.0, 1.0, n)
        else:
            v = r.standard_normal(n) * 3
        if kind == 'specials' and n >= 6:
            pos = r.choice(n, 6, replace=False)
            for p, s in zip(pos, [np.nan, -0.0, 0.0, np.inf, -np.inf, 0.0]):
                v[p] = s
        return oc.round_float(v.reshape(shape), dt)

    def save(self, arr):
        a = np.asarray(arr)
        a = a.astype(np.int64) if a.dtype.kind in 'iub' else a.astype(np.float64)
        return self.files.save(a)

    def save_input(self, arr):
        """An input reused by several cases is written once (kept alive so
        its id stays unique)."""
        if id(arr) not in self.saved:
            self.saved[id(arr)] = (self.save(arr), arr)
        return self.saved[id(arr)][0]

    def case(self, op, dt, inputs, params, expected, tol=0.0):
        """inputs: list of (array, view); expected: array, list of arrays or '!STATUS'."""
        specs = ','.join('%s@%s' % (self.save_input(a), v) for a, v in inputs)
        if isinstance(expected, str):
            exp = expected
        else:
            exp = ','.join(self.save(e) for e in (expected if isinstance(expected, list) else [expected]))
        if not isinstance(expected, str):
            outs = expected if isinstance(expected, list) else [expected]
            self.covered.update((op, dt, lay) for lay in case_layouts(inputs, outs))
        vname = '-'.join(v for _, v in inputs).replace(':', '.')
        pid = '%04d.%s.%s.%s' % (len(self.lines), op, dt, vname)
        self.lines.append(' '.join([pid, op, dt, specs, params or '-', exp, repr(float(tol))]))

    def write(self):
        oc.write_manifest(self.dir, [' more ops oracle (gen_ops_extra.py), seed %#x' % SEED], self.lines)


def apply_view(x, view):
    return np.ascontiguousarray(oc.view_of(x, view))


def logical(a, view):
    """apply_view that keeps a rank-0 array rank 0 (np.ascontiguousarray
    makes it 1-d)."""
    a = np.asarray(a)
    return a if view == 'c' else apply_view(a, view)


def case_layouts(inputs, outs):
    """op_table layout letters a case covers (oc.case_layouts; the coverage
    test of test_oracle_ops_extra.c checks the same)."""
    return oc.case_layouts([(view, logical(a, view).shape) for a, view in inputs], [np.shape(o) for o in outs])


def layouts(shape, broadcast=True):
    """(base shape, view) pairs whose view has the logical shape `shape`."""
    out = [(tuple(shape), 'c')]
    if len(shape) >= 2:
        s = list(shape)
        s[-1], s[-2] = s[-2], s[-1]
        out.append((tuple(s), 't'))
    if len(shape) >= 1:
        s = list(shape)
        s[-1] += 3
        out.append((tuple(s), 'n%d:2:%d' % (len(shape) - 1, shape[-1])))
    if broadcast and len(shape) >= 2 and shape[0] != 1:
        s = list(shape)
        s[0] = 1
        out.append((tuple(s), 'b' + 'x'.join(str(z) for z in shape)))
    return out


def viewed(g, shape, dt, kind='normal', broadcast=True):
    """[(base, view, logical array)] for each layout of shape."""
    res = []
    for bs, v in layouts(shape, broadcast):
        base = g.values(bs, dt, kind)
        res.append((base, v, apply_view(base, v)))
    return res


# ---------------------------------------------------------------- round_to

def powi10(d):
    a, r, b = 10.0, 1.0, d
    while True:
        if b % 2 != 0:      # C's b & 1 on two's complement: odd, either sign
            r *= a
        b = int(b / 2)      # C division truncates toward zero
        if b == 0:
            break
        a *= a
    return 1.0 / r if d < 0 else r


def mul_in(x, m, dt):
    """x * m as wick's affine computes it in dtype dt (value on dt's grid)."""
    with np.errstate(all='ignore'):
        if dt == 'f64':
            return x * m
        p = (np.asarray(x, np.float64).astype(np.float32) * np.float32(m)).astype(np.float64)
        return oc.round_float(p, dt)


def round_half_away(y):
    with np.errstate(all='ignore'):
        r = np.trunc(y)
        return r + np.where(np.abs(y - r) >= 0.5, np.sign(y), 0.0)


def gen_round_to(g):
    for dt in FLOATS:
        for shape in [(5, 7), (3, 4, 2), (0, 3), (1,)]:
            for base, view, x in viewed(g, shape, dt, 'specials'):
                for dec in (0, 1, 2, -1, 3, -2):
                    m = powi10(dec)
                    exp = mul_in(round_half_away(mul_in(x, m, dt)), 1.0 / m, dt)
                    g.case('round_to', dt, [(base, view)], 'dec=%d' % dec, exp)
    # ties: half away from zero, not numpy's half to even
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 0.125, -0.375, 12.5, 1234.5, -0.0])
    for dt in ('f32', 'f64'):
        for dec in (0, 2, -1):
            m = powi10(dec)
            exp = mul_in(round_half_away(mul_in(x, m, dt)), 1.0 / m, dt)
            g.case('round_to', dt, [(x, 'c')], 'dec=%d' % dec, exp)
    # against torch's own rounding where no ties occur: the same up to an ulp
    x = g.values((50,), 'f64')
    for dec in (0, 1, 3, -1):
        m = powi10(dec)
        exp = mul_in(round_half_away(mul_in(x, m, 'f64')), 1.0 / m, 'f64')
        ref = torch.round(torch.from_numpy(x), decimals=dec).numpy()
        assert np.allclose(exp, ref, rtol=1e-14, atol=0), dec
        g.case('round_to', 'f64', [(x, 'c')], 'dec=%d' % dec, exp)
    g.case('round_to', 'f32', [(np.array(2.345), 'c')], 'dec=2', mul_in(round_half_away(
        mul_in(np.array(2.345), 100.0, 'f32')), 0.01, 'f32'))
    for dt in INTS:
        g.case('round_to', dt, [(np.zeros((2, 2), np.int64), 'c')], 'dec=1', '!DTYPE')


# -------------------------------------------------------------------- norm

def gen_norm(g):
    ps = [2.0, 1.0, 3.0, 0.5, math.inf, -math.inf, 0.0, -1.0]
    shapes = [((4, 6), '1'), ((4, 6), '0'), ((3, 4, 5), '0|2'), ((3, 4, 5), '-1'), ((3, 4, 5), ''),
              ((7,), ''), ((2, 3), '-2|-1'), ((1,), '0')]
    for dt in FLOATS:
        for shape, dims in shapes:
            axes = tuple(int(d) for d in dims.split('|')) if dims else None
            for base, view, x in viewed(g, shape, dt):
                for p in ps:
                    if view != 'c' and p not in (2.0, math.inf, 0.5):
                        continue
                    x2 = x.copy()
                    if p == 0.0 and x2.size > 2:
                        x2.reshape(-1)[::3] = 0.0
                        base = None
                    for keep in (0, 1):
                        r = torch.linalg.vector_norm(torch.from_numpy(x2), ord=p, dim=axes, keepdim=bool(keep))
                        exp = oc.round_float(r.numpy(), dt)
                        tol = TOL[dt] * (4 if dt in ('f16', 'bf16') else 1)
                        if dt == 'f32' and p not in (1.0, 2.0, 0.0) and not math.isinf(p):
                            tol = 1e-5  # powf of a sum
                        inp = (x2, 'c') if base is None else (base, view)
                        g.case('norm', dt, [inp], 'p=%r;dims=%s;keep=%d' % (p, dims, keep), exp, tol)
    # NaN and inf; values whose squares overflow f16 (computed in f32)
    x = np.array([[np.nan, 1.0, 2.0], [np.inf, 1.0, -2.0], [3.0, -4.0, 0.0]])
    for dt in ('f32', 'f64'):
        for p in (2.0, 1.0, math.inf, 0.0, 3.0):
            r = torch.linalg.vector_norm(torch.from_numpy(x), ord=p, dim=1)
            g.case('norm', dt, [(x, 'c')], 'p=%r;dims=1;keep=0' % p, oc.round_float(r.numpy(), dt), 1e-6)
    x = np.array([300.0, 400.0, -1200.0])
    for dt in ('f16', 'bf16'):
        xr = oc.round_float(x, dt)
        r = torch.linalg.vector_norm(torch.from_numpy(xr), ord=2)
        g.case('norm', dt, [(xr, 'c')], 'p=2.0;dims=;keep=0', oc.round_float(r.numpy(), dt), TOL[dt])
    # large f32 sum of squares (many elements, split reductions)
    x = g.values((200000,), 'f32', 'small')
    r = torch.linalg.vector_norm(torch.from_numpy(x), ord=2)
    g.case('norm', 'f32', [(x, 'c')], 'p=2.0;dims=;keep=0', oc.round_float(r.numpy(), 'f32'), 1e-5)
    # empty reductions: zeros, or an error where torch has no identity
    e = np.zeros((0, 3))
    for p in (2.0, 1.0, 0.0, 0.5):
        g.case('norm', 'f32', [(e, 'c')], 'p=%r;dims=0;keep=0' % p, np.zeros(3))
        g.case('norm', 'f32', [(e, 'c')], 'p=%r;dims=;keep=0' % p, np.array(0.0))
    for p in (math.inf, -math.inf, -1.0):
        g.case('norm', 'f32', [(e, 'c')], 'p=%r;dims=0;keep=0' % p, '!SHAPE')
        g.case('norm', 'f32', [(e, 'c')], 'p=%r;dims=1;keep=0' % p, np.zeros((0,)))
    g.case('norm', 'f64', [(np.array(-3.0), 'c')], 'p=2.0;dims=;keep=0', np.array(3.0))
    g.case('norm', 'f32', [(np.ones((2, 2)), 'c')], 'p=nan;dims=;keep=0', '!ARG')
    g.case('norm', 'f32', [(np.ones((2, 2)), 'c')], 'p=2.0;dims=2;keep=0', '!INDEX')
    g.case('norm', 'f32', [(np.ones((2, 2)), 'c')], 'p=2.0;dims=0|-2;keep=0', '!ARG')
    for dt in INTS:
        g.case('norm', dt, [(np.ones((2, 2), np.int64), 'c')], 'p=2.0;dims=;keep=0', '!DTYPE')


# ---------------------------------------------------------------- dot / mv

def gen_products(g):
    for dt in FLOATS:
        for k in (1, 7, 64, 1000, 0):
            a = g.values((k,), dt, 'small')
            b = g.values((k,), dt, 'small')
            tol = {'f64': 1e-12, 'f32': 1e-5, 'f16': 4e-3, 'bf16': 3e-2}[dt]
            g.case('dot', dt, [(a, 'c'), (b, 'c')], '-', np.array(np.dot(a, b)), tol)
            if k:
                # strided vectors: a narrowed one and a stride-0 (broadcast) one
                an = g.values((k + 3,), dt, 'small')
                g.case('dot', dt, [(an, 'n0:2:%d' % k), (b, 'c')], '-', np.array(np.dot(an[2:2 + k], b)), tol)
                one = g.values((1,), dt, 'small')
                g.case('dot', dt, [(a, 'c'), (one, 'b%d' % k)], '-', np.array(np.dot(a, np.repeat(one, k))), tol)
        for n, k in ((5, 7), (1, 9), (33, 64), (300, 200), (4, 0), (0, 5)):
            m = g.values((n, k), dt, 'small')
            v = g.values((k,), dt, 'small')
            tol = {'f64': 1e-12, 'f32': 1e-5, 'f16': 4e-3, 'bf16': 3e-2}[dt]
            g.case('mv', dt, [(m, 'c'), (v, 'c')], '-', m @ v, tol)
            if n and k:
                mt = np.ascontiguousarray(m.T)
                g.case('mv', dt, [(mt, 't'), (v, 'c')], '-', m @ v, tol)
                vn = g.values((k + 3,), dt, 'small')
                g.case('mv', dt, [(m, 'c'), (vn, 'n0:2:%d' % k)], '-', m @ vn[2:2 + k], tol)
                mb = g.values((1, k), dt, 'small')
                g.case('mv', dt, [(mb, 'b%dx%d' % (n, k)), (v, 'c')], '-', np.broadcast_to(mb, (n, k)) @ v, tol)
    # error cases
    a, b = np.ones(3), np.ones(4)
    g.case('dot', 'f32', [(a, 'c'), (b, 'c')], '-', '!SHAPE')
    g.case('dot', 'f32', [(np.ones((2, 3)), 'c'), (a, 'c')], '-', '!SHAPE')
    g.case('dot', 'f32', [(np.array(1.0), 'c'), (np.array(1.0), 'c')], '-', '!SHAPE')
    g.case('mv', 'f32', [(np.ones((2, 3)), 'c'), (b, 'c')], '-', '!SHAPE')
    g.case('mv', 'f32', [(a, 'c'), (a, 'c')], '-', '!SHAPE')
    g.case('mv', 'f32', [(np.ones((2, 2, 3)), 'c'), (a, 'c')], '-', '!SHAPE')
    for dt in INTS:
        g.case('dot', dt, [(np.ones(3, np.int64), 'c'), (np.ones(3, np.int64), 'c')], '-', '!DTYPE')
        g.case('mv', dt, [(np.ones((2, 3), np.int64), 'c'), (np.ones(3, np.int64), 'c')], '-', '!DTYPE')


# ------------------------------------------------------------- tril / triu

def gen_triangles(g):
    for dt in ALL:
        for shape in [(4, 6), (6, 4), (5, 5), (2, 3, 4, 5), (1, 1), (0, 3), (3, 0), (2, 0, 4)]:
            for base, view, x in viewed(g, shape, dt, 'specials'):
                if 0 in shape and view != 'c':
                    continue
                ks = (0, 1, -1, 2, -3, 100, -100) if view == 'c' else (0, 2, -1)
                for k in ks:
                    g.case('tril', dt, [(base, view)], 'k=%d' % k, np.tril(x, k))
                    g.case('triu', dt, [(base, view)], 'k=%d' % k, np.triu(x, k))
    x = g.values((3, 4), 'f32')
    for k in (9223372036854775807, -9223372036854775807):
        kc = max(-10, min(10, k))  # numpy's own iota overflows; the same triangle
        g.case('tril', 'f32', [(x, 'c')], 'k=%d' % k, np.tril(x, kc))
        g.case('triu', 'f32', [(x, 'c')], 'k=%d' % k, np.triu(x, kc))
    for op in ('tril', 'triu'):
        g.case(op, 'f32', [(np.ones(4), 'c')], 'k=0', '!SHAPE')
        g.case(op, 'f32', [(np.array(1.0), 'c')], 'k=0', '!SHAPE')


# ---------------------------------------------------------------- meshgrid

def gen_meshgrid(g):
    for dt in ('f32', 'i64', 'u8', 'bf16', 'f64'):
        for sizes in [(3,), (3, 4), (2, 3, 4), (4, 1, 2), (0, 3), (1, 1), (2, 3, 2, 2)]:
            for idx in ('ij', 'xy'):
                ins, arrs = [], []
                for i, s in enumerate(sizes):
                    if i == 1 and s > 0:  # a narrowed (offset) input
                        base = g.values((s + 3,), dt)
                        ins.append((base, 'n0:2:%d' % s))
                        arrs.append(base[2:2 + s])
                    else:
                        a = g.values((s,), dt)
                        ins.append((a, 'c'))
                        arrs.append(a)
                outs = [t.numpy() for t in torch.meshgrid(*[torch.from_numpy(a) for a in arrs], indexing=idx)]
                g.case('meshgrid', dt, ins, 'idx=' + idx, outs)
    # a stride-0 (broadcast) input and a rank-0 one
    one = g.values((1,), 'f32')
    col = np.repeat(one, 4)
    s = np.array(2.5)
    outs = [t.numpy() for t in torch.meshgrid(torch.from_numpy(col), torch.from_numpy(s), indexing='ij')]
    g.case('meshgrid', 'f32', [(one, 'b4'), (s, 'c')], 'idx=ij', outs)
    outs = [t.numpy() for t in torch.meshgrid(torch.from_numpy(s), torch.from_numpy(col), indexing='xy')]
    g.case('meshgrid', 'f32', [(s, 'c'), (one, 'b4')], 'idx=xy', outs)
    g.case('meshgrid', 'f32', [(np.ones((2, 2)), 'c'), (np.ones(3), 'c')], 'idx=ij', '!SHAPE')


# ------------------------------------------------------------ slice_assign

def py_slice(size, s, e, k):
    if s < 0:
        s += size
    if e < 0:
        e += size
    return slice(s, e, k)


def gen_slice_assign(g):
    cases = [
        ((6, 5), [1, 0], [4, 5], [1, 1]),
        ((6, 5), [0, 1], [6, 5], [2, 3]),
        ((6, 5), [-3, -4], [-1, 5], [1, 2]),
        ((4, 3, 5), [1, 0, 2], [3, 3, 5], [1, 2, 1]),
        ((4, 3, 5), [1], [3], [1]),            # trailing dims whole
        ((4, 3, 5), [0, 1], [4, 2], [3, 1]),
        ((7,), [2], [7], [4]),
        ((5, 4), [2, 1], [2, 3], [1, 1]),       # empty slice
        ((5, 4), [1, 1], [4, 3], [100, 1]),     # a huge step (one element)
    ]
    for dt in ('f32', 'f64', 'i32', 'u8', 'f16', 'bf16', 'i64'):
        for shape, starts, ends, steps in cases:
            sl = tuple(py_slice(shape[i], starts[i], ends[i], steps[i]) for i in range(len(starts)))
            for base, view, x in viewed(g, shape, dt, broadcast=False):
                if view != 'c' and dt not in ('f32', 'i32'):
                    continue
                sshape = x[sl].shape
                params = 'starts=%s;ends=%s;steps=%s' % tuple('|'.join(str(v) for v in z) for z in (starts, ends, steps))
                # exact-shape src, then a broadcast one (size-1 first dim), then rank 0
                srcs = [(g.values(sshape, dt), 'c')]
                if len(sshape) >= 2 and sshape[0] > 1:
                    b = g.values((1,) + sshape[1:], dt)
                    srcs.append((b, 'c'))
                srcs.append((g.values((), dt), 'c'))
                if len(sshape) >= 2 and sshape[-1] > 0 and sshape[-2] > 0:
                    st = g.values(sshape[:-2] + (sshape[-1], sshape[-2]), dt)
                    srcs.append((st, 't'))
                for src, sv in srcs:
                    want = x.copy()
                    want[sl] = apply_view(src, sv)
                    for op in ('slice_assign', 'slice_assign_'):
                        g.case(op, dt, [(base, view), (src, sv)], params, want)
    # steps omitted (all 1)
    x = g.values((4, 4), 'f32')
    src = g.values((2, 3), 'f32')
    want = x.copy()
    want[1:3, 0:3] = src
    g.case('slice_assign', 'f32', [(x, 'c'), (src, 'c')], 'starts=1|0;ends=3|3', want)
    # whole-tensor assignment (no sliced dims) with broadcasting
    src = g.values((4,), 'f32')
    g.case('slice_assign', 'f32', [(x, 'c'), (src, 'c')], 'starts=;ends=', np.broadcast_to(src, (4, 4)))
    # errors
    z = np.zeros((4, 4))
    bad = [('starts=0|0;ends=5|1', (1, 1), '!INDEX'), ('starts=3|0;ends=2|1', (1, 1), '!INDEX'),
           ('starts=-5|0;ends=2|1', (1, 1), '!INDEX'), ('starts=0|0;ends=2|2;steps=0|1', (1, 1), '!ARG'),
           ('starts=0|0;ends=2|2;steps=1|-1', (1, 1), '!ARG'), ('starts=0|0;ends=2|2', (3, 2), '!SHAPE'),
           ('starts=0|0|0;ends=1|1|1', (1, 1), '!ARG')]
    for params, sshape, st in bad:
        for op in ('slice_assign', 'slice_assign_'):
            g.case(op, 'f32', [(z, 'c'), (np.ones(sshape), 'c')], params, st)


# --------------------------------------------------------------- upsample

def torch_t(x, dt):
    if dt == 'f32':
        return torch.from_numpy(x.astype(np.float32))
    return torch.from_numpy(np.asarray(x, np.float64))


def gen_upsample(g):
    C = 3
    scales2 = [(1.5, 1.7), (0.6, 2.3), (2.0, 2.0), (3.0, 0.5), (2.5, 1.0), (1.0, 1.3333), (0.75, 0.4),
               (1.2, 1.2), (1.0 / 3, 3.0)]
    for dt in ('f32', 'f64', 'i32', 'u8', 'f16', 'bf16'):
        for (h, w) in [(5, 7), (4, 3), (6, 6), (2, 2)]:
            for base, view, x in viewed(g, (2, C, h, w), dt, broadcast=False):
                if view != 'c' and dt not in ('f32', 'i32'):
                    continue
                xt = torch_t(x, 'f64')
                for sh, sw in scales2:
                    oh, ow = math.floor(h * sh), math.floor(w * sw)
                    if oh < 1 or ow < 1:
                        g.case('upsample_nearest2d_scale', dt, [(base, view)], 'sh=%r;sw=%r' % (sh, sw), '!SHAPE')
                        continue
                    y = F.interpolate(xt, scale_factor=(sh, sw), mode='nearest').numpy()
                    g.case('upsample_nearest2d_scale', dt, [(base, view)], 'sh=%r;sw=%r' % (sh, sw), y)
                    if dt in INTS:
                        continue
                    for ac in (False, True):
                        yb = F.interpolate(torch_t(x, dt), scale_factor=(sh, sw), mode='bilinear',
                                           align_corners=ac).to(torch.float64).numpy()
                        tol = {'f32': 3e-6, 'f64': 1e-12, 'f16': 2e-3, 'bf16': 1.6e-2}[dt]
                        g.case('upsample_bilinear2d_scale', dt, [(base, view)], 'sh=%r;sw=%r;ac=%d' % (sh, sw, ac),
                               oc.round_float(yb, dt), tol)
        for L in (5, 3, 7, 4):
            for base, view, x in viewed(g, (2, C, L), dt, broadcast=False):
                if view != 'c' and dt != 'f32':
                    continue
                for s in (1.5, 2.3, 2.0, 0.6, 3.3, 1.0, 2.5):
                    if math.floor(L * s) < 1:
                        continue
                    y = F.interpolate(torch_t(x, 'f64'), scale_factor=s, mode='nearest').numpy()
                    g.case('upsample_nearest1d_scale', dt, [(base, view)], 's=%r' % s, y)
    # torch's general kernel: assert the C = 1 shortcut is the only difference
    x = np.arange(12.0).reshape(1, 1, 4, 3)
    y3 = F.interpolate(torch.from_numpy(np.repeat(x, 3, 1)), scale_factor=(0.6, 2.3), mode='nearest').numpy()
    assert np.array_equal(y3[0, 0], [[0, 0, 0, 1, 1, 2], [3, 3, 3, 4, 4, 5]]), y3[0, 0]
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=0.6;sw=2.3', y3[:, :1])
    # errors
    x = np.ones((1, 2, 3, 3))
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=0.0;sw=1.0', '!ARG')
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=-1.0;sw=1.0', '!ARG')
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=inf;sw=1.0', '!ARG')
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=nan;sw=1.0', '!ARG')
    g.case('upsample_nearest2d_scale', 'f32', [(x, 'c')], 'sh=0.2;sw=1.0', '!SHAPE')
    g.case('upsample_nearest2d_scale', 'f32', [(np.ones((2, 3, 3)), 'c')], 'sh=2.0;sw=2.0', '!SHAPE')
    g.case('upsample_nearest1d_scale', 'f32', [(x, 'c')], 's=2.0', '!SHAPE')
    g.case('upsample_bilinear2d_scale', 'i32', [(x.astype(np.int64), 'c')], 'sh=1.5;sw=1.5;ac=0', '!DTYPE')


# ------------------------------------------------------- op-table sweep

F8_SMALL = [0.0, 0.25, 0.5, 1.0, 1.5, -0.5, -1.0, -0.25]
SWEEP_TOL = {'f64': 1e-12, 'f32': 1e-5, 'f16': 4e-3, 'bf16': 3e-2, 'f8e4m3': 0.13}


def laid_out(g, shape, dt, lay, kind='normal'):
    """(base, view) of an input whose view has the logical shape `shape` in
    op_table layout lay (t n b tn p; anything else: contiguous)."""
    shape, r = tuple(shape), len(shape)

    def swap(s):
        s = list(s)
        s[-1], s[-2] = s[-2], s[-1]
        return tuple(s)
    if lay == 't' and r >= 2:
        bs, view = swap(shape), 't'
    elif lay == 'n' and r >= 1:
        bs, view = shape[:-1] + (shape[-1] + 3,), 'n%d:2:%d' % (r - 1, shape[-1])
    elif lay == 'b' and r >= 1 and shape[0] > 1:
        bs, view = (1,) + shape[1:], 'b' + 'x'.join(str(z) for z in shape)
    elif lay == 'tn' and r >= 2:
        bs, view = swap(shape[:-1] + (shape[-1] + 3,)), 't+n%d:2:%d' % (r - 1, shape[-1])
    elif lay == 'p' and r >= 2:
        bs, view = shape[::-1], 'p' + ':'.join(str(i) for i in reversed(range(r)))
    else:
        bs, view = shape, 'c'
    if dt == 'f8e4m3' and kind == 'small':
        base = np.array(g.rng.choice(F8_SMALL, int(np.prod(bs))), np.float64).reshape(bs)
    else:
        base = g.values(bs, dt, kind)
    return base, view


def sized(shape, lay):
    """The op's usual shape, or the shape layouts e / 1 / 0 stand for."""
    if lay == 'e':
        return (0,) + tuple(shape[1:])
    if lay == '1':
        return tuple(1 for _ in shape)
    if lay == '0':
        return ()
    return tuple(shape)


def sweep_case(g, op, dt, lay):
    """One case of op on dt whose inputs cover layout lay: (inputs, params,
    expected, tol), or None where sweep_case has no meaning for op."""
    if op == 'round_to':
        b, v = laid_out(g, sized((3, 4), lay), dt, lay)
        x = logical(b, v)
        return [(b, v)], 'dec=1', mul_in(round_half_away(mul_in(x, 10.0, dt)), 0.1, dt), 0.0
    if op == 'norm':
        b, v = laid_out(g, sized((3, 4), lay), dt, lay, 'small')
        r = torch.linalg.vector_norm(torch.from_numpy(logical(b, v)), ord=2.0)
        return [(b, v)], 'p=2.0;dims=;keep=0', oc.round_float(r.numpy(), dt), SWEEP_TOL[dt]
    if op in ('dot', 'mv'):
        k = {'e': 0, '1': 1}.get(lay, 7)
        ms = (1 if lay == '1' else 5, k) if op == 'mv' else (k,)
        a = laid_out(g, ms, dt, lay, 'small')
        vb, vv = laid_out(g, (k,), dt, 'c', 'small')
        want = logical(*a) @ vb
        return [a, (vb, vv)], '-', np.array(oc.round_float(np.asarray(want, np.float64), dt)), SWEEP_TOL[dt]
    if op in ('tril', 'triu'):
        b, v = laid_out(g, sized((4, 5), lay), dt, lay)
        x = logical(b, v)
        return [(b, v)], 'k=1', np.tril(x, 1) if op == 'tril' else np.triu(x, 1), 0.0
    if op == 'meshgrid':
        sizes = {'e': [(0,), (4,)], '1': [(1,), (1,)], '0': [(), ()]}.get(lay, [(3,), (4,)])
        ins = [laid_out(g, sizes[0], dt, lay), laid_out(g, sizes[1], dt, 'c')]
        outs = [t.numpy() for t in torch.meshgrid(*[torch.from_numpy(logical(*i)) for i in ins], indexing='ij')]
        return ins, 'idx=ij', outs, 0.0
    if op in ('slice_assign', 'slice_assign_'):
        d = laid_out(g, (6, 5), dt, lay)
        src = g.values((3, 5), dt)
        want = logical(*d).copy()
        want[1:4, 0:5] = src
        return [d, (src, 'c')], 'starts=1|0;ends=4|5;steps=1|1', want, 0.0
    if op == 'upsample_nearest1d_scale':
        b, v = laid_out(g, (2, 3, 5), dt, lay)
        y = F.interpolate(torch_t(logical(b, v), 'f64'), scale_factor=1.5, mode='nearest').numpy()
        return [(b, v)], 's=1.5', y, 0.0
    if op == 'upsample_nearest2d_scale':
        b, v = laid_out(g, (2, 3, 5, 7), dt, lay)
        y = F.interpolate(torch_t(logical(b, v), 'f64'), scale_factor=(1.5, 1.7), mode='nearest').numpy()
        return [(b, v)], 'sh=1.5;sw=1.7', y, 0.0
    if op == 'upsample_bilinear2d_scale':
        b, v = laid_out(g, (2, 3, 5, 7), dt, lay, 'small')
        y = F.interpolate(torch_t(logical(b, v), dt), scale_factor=(1.5, 1.7), mode='bilinear',
                          align_corners=False).to(torch.float64).numpy()
        return [(b, v)], 'sh=1.5;sw=1.7;ac=0', oc.round_float(y, dt), SWEEP_TOL[dt]
    return None


def sweep(g):
    """One case for every (op, dtype, layout) op_table.def declares for this
    generator's ops that no section above covered; one left uncovered (an op
    sweep_case does not know) fails the run."""
    def make_case(name, dt, lay):
        c = sweep_case(g, name, dt, lay)
        if c is not None:
            g.case(name, dt, c[0], c[1], c[2], c[3])
    oc.sweep('gen_ops_extra', g.covered, make_case)


def main():
    if len(sys.argv) != 2:
        print('usage: gen_ops_extra.py OUTDIR', file=sys.stderr)
        return 2
    torch.manual_seed(0)
    g = Gen(sys.argv[1])
    gen_round_to(g)
    gen_norm(g)
    gen_products(g)
    gen_triangles(g)
    gen_meshgrid(g)
    gen_slice_assign(g)
    gen_upsample(g)
    n_sections = len(g.lines)
    sweep(g)
    g.write()
    print('gen_ops_extra: %d section cases, %d op-table sweep cases' % (n_sections, len(g.lines) - n_sections))
    print('gen_ops_extra: %d cases' % len(g.lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
