#!/usr/bin/env python3
"""Oracle for pooling and resampling: PyTorch 1.13's F.avg_pool2d,
F.max_pool2d and F.interpolate (nearest, bilinear) compute what wick's
wk_avg_pool2d, wk_max_pool2d, wk_upsample_nearest1d/2d and
wk_upsample_bilinear2d must return.

    /usr/bin/python3 tests/oracle/gen_pool.py OUTDIR

writes OUTDIR/pool/manifest.txt and OUTDIR/pool/pNNNNN.npy only.
tests/test_oracle_pool.c reads them. Output fully determined by SEED.

manifest.txt: '#' lines are comments; every other line is one case with
nine fields separated by single spaces:

    id op dtype variant params input expected atol rtol

  op        avg_pool2d | max_pool2d | upsample_nearest1d |
            upsample_nearest2d | upsample_bilinear2d (op_table.def's names)
  params    ';'-joined key=value: k=KHxKW s=SHxSW p=PHxPW cip=0|1 (pools),
            size=OHxOW or size=L (upsample), ac=0|1 (bilinear)
  input     FILE@VIEW: FILE is loaded with wk_npy_load, converted to dtype,
            then VIEW ('+'-joined tokens) applied: c (none), t (transpose
            last two dims), nD:S:L (narrow), bSHAPE (broadcast_as, 'x'
            separated), pA:B:C:D (permute)
  expected  FILE: float64 for float dtypes, the integer dtype for integer
            ones; its shape is the result's shape
  atol rtol |got - want| <= atol + rtol * |want|; NaN must match NaN

Float inputs are stored on the dtype's grid (f16 as <f2, bf16 / f8e4m3 as
f32 values on their grid). f16 / bf16 / f8e4m3 results are torch's f32 result
on those inputs rounded once to the dtype (wick computes in f32 and rounds
once; torch 1.13 has no CPU f16 kernels for these ops, and its bf16 bilinear
keeps bf16 intermediates, off by up to ~0.25 on N(0,1) data). Integer results
come from torch in float64 (exact for the ranges used; torch 1.13 has no
integer max_pool2d on CPU).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x900152
LAYOUT = {'contig': 'c', 'transposed': 't', 'narrowed': 'n', 'permuted': 'p', 'broadcast': 'b'}
TABLE_NAME = {'nearest1d': 'upsample_nearest1d', 'nearest2d': 'upsample_nearest2d', 'bilinear2d': 'upsample_bilinear2d'}
INTS = oc.INTS
NP_INT = oc.NP_INT
IRANGE = {'u8': (0, 255), 'u32': (0, 4294967295), 'i16': (-32768, 32767), 'i32': (-2 ** 31, 2 ** 31 - 1),
          'i64': (-2 ** 50, 2 ** 50)}
TOL = {'f64': (1e-12, 1e-12), 'f32': (1e-6, 1e-5), 'f16': (1e-3, 2e-3), 'bf16': (1e-2, 1e-2),
       'f8e4m3': (2.0 ** -9, 0.13)}
EXACT = (0.0, 0.0)


def quant(x, dt):
    """float64 values on dt's grid (floats)."""
    return oc.round_float(x, dt)


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'pool')
        os.makedirs(self.dir, exist_ok=True)
        for f in os.listdir(self.dir):
            if f.endswith('.npy') or f == 'manifest.txt':
                os.remove(os.path.join(self.dir, f))
        self.files = oc.NpyFiles(self.dir, 'p')
        self.lines = []
        self.covered = set()   # (op, dtype, layout) written
        self.rng = np.random.default_rng(SEED)

    def save(self, arr):
        return self.files.save(arr)

    def stored(self, x, dt):
        """array to store for logical values x (already on the grid)."""
        if dt in INTS:
            return x.astype(NP_INT[dt])
        if dt == 'f64':
            return x.astype(np.float64)
        if dt == 'f16':
            return x.astype(np.float16)
        return x.astype(np.float32)

    def values(self, shape, dt, nan=False):
        if dt in INTS:
            lo, hi = IRANGE[dt]
            v = self.rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
            # a few extremes
            flat = v.reshape(-1)
            if flat.size >= 4:
                flat[0] = lo
                flat[-1] = hi
            return v
        v = quant(self.rng.standard_normal(shape) * 2.0, dt)
        if dt == 'f8e4m3':
            v = quant(self.rng.standard_normal(shape), dt)
        if nan and v.size > 2:
            flat = v.reshape(-1)
            flat[self.rng.integers(0, v.size)] = np.nan
            flat[self.rng.integers(0, v.size)] = np.inf
            flat[self.rng.integers(0, v.size)] = -np.inf
        return v

    def input_spec(self, x, dt, variant):
        """store logical x (N, C, ..., W) under a layout variant; returns FILE@VIEW."""
        r = x.ndim
        if variant == 'contig':
            return self.save(self.stored(x, dt)) + '@c'
        if variant == 'transposed':
            return self.save(self.stored(np.swapaxes(x, -1, -2), dt)) + '@t'
        if variant == 'narrowed':
            shape = list(x.shape)
            shape[-1] += 3
            big = np.zeros(shape, dtype=x.dtype)
            big[..., 2:2 + x.shape[-1]] = x
            return self.save(self.stored(big, dt)) + '@n%d:2:%d' % (r - 1, x.shape[-1])
        if variant == 'permuted':
            return self.save(self.stored(np.swapaxes(x, 0, 1), dt)) + '@p' + ':'.join(
                str(i) for i in [1, 0] + list(range(2, r)))
        raise ValueError(variant)

    def case(self, op, dt, variant, params, spec, want, tol):
        # the manifest spells ops and sizes as op_table.def does
        op = TABLE_NAME.get(op, op)
        params = params.replace('out=', 'size=')
        self.covered.add((op, dt, LAYOUT[variant]))
        i = len(self.lines)
        if dt in INTS:
            exp = self.save(np.asarray(want).astype(NP_INT[dt]))
        else:
            exp = self.save(np.asarray(want, np.float64))
        self.lines.append('%04d.%s.%s.%s %s %s %s %s %s %s %r %r' % (
            i, op, dt, variant, op, dt, variant, params, spec, exp, float(tol[0]), float(tol[1])))

    def write(self):
        oc.write_manifest(self.dir, [' id op dtype variant params input expected atol rtol'], self.lines)


def run_torch(fn, x, dt):
    """expected values of fn on logical input x (float64 values on dt's grid)."""
    if dt in INTS or dt == 'f64':
        y = fn(torch.from_numpy(np.asarray(x, np.float64))).numpy()
        if dt in INTS:
            return np.round(y).astype(np.int64)
        return y
    y = fn(torch.from_numpy(np.asarray(x, np.float32))).numpy().astype(np.float64)
    return quant(y, dt) if dt != 'f32' else y


def tol_of(op, dt):
    if dt in INTS:
        return EXACT
    if op in ('max_pool2d', 'nearest1d', 'nearest2d'):
        return EXACT
    return TOL[dt]


# one config per op for the op-table sweep: (old name, input shape, params, torch fn)
SWEEP = {
    'max_pool2d': ('max_pool2d', (2, 3, 9, 10), 'k=3x3;s=2x2;p=1x1', lambda t: F.max_pool2d(t, 3, 2, 1)),
    'avg_pool2d': ('avg_pool2d', (2, 3, 9, 10), 'k=3x3;s=2x2;p=1x1;cip=0',
                   lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False)),
    'upsample_nearest1d': ('nearest1d', (2, 3, 7), 'size=12', lambda t: F.interpolate(t, size=12, mode='nearest')),
    'upsample_nearest2d': ('nearest2d', (2, 3, 5, 7), 'size=10x4',
                           lambda t: F.interpolate(t, size=(10, 4), mode='nearest')),
    'upsample_bilinear2d': ('bilinear2d', (2, 3, 5, 7), 'size=9x11;ac=0',
                            lambda t: F.interpolate(t, size=(9, 11), mode='bilinear', align_corners=False)),
}


def sweep(g):
    """One case for every (op, dtype, layout) op_table.def declares for this
    generator's ops that the sections above did not write; one left
    uncovered (an op SWEEP does not know, a layout it cannot build) fails."""
    variant_of = {v: k for k, v in LAYOUT.items()}

    def make_case(name, dt, lay):
        if name in SWEEP and lay in variant_of:
            old, shape, params, fn = SWEEP[name]
            if lay == 'b':
                x1 = g.values((1,) + shape[1:], dt)
                x = np.broadcast_to(x1, (3,) + shape[1:])
                spec = g.save(g.stored(x1, dt)) + '@b' + 'x'.join(str(z) for z in x.shape)
                x = np.ascontiguousarray(x)
            else:
                x = g.values(shape, dt)
                spec = g.input_spec(x, dt, variant_of[lay])
            g.case(old, dt, variant_of[lay], params, spec, run_torch(fn, x, dt), tol_of(old, dt))
    oc.sweep('gen_pool', g.covered, make_case)


def main():
    if len(sys.argv) != 2:
        print('usage: gen_pool.py OUTDIR', file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    g = Gen(sys.argv[1])
    floats = ['f32', 'f64', 'f16', 'bf16']
    variants = ['contig', 'transposed', 'narrowed', 'permuted']

    # ---- pools: many kernel / stride / padding combinations
    pool_cfgs = [  # (kh, kw, sh, sw, ph, pw)
        (1, 1, 1, 1, 0, 0), (2, 2, 2, 2, 0, 0), (3, 3, 2, 2, 1, 1), (3, 3, 1, 1, 1, 1), (2, 3, 1, 2, 1, 1),
        (3, 2, 3, 1, 0, 1), (5, 5, 2, 3, 2, 2), (4, 4, 3, 3, 2, 1), (7, 3, 2, 1, 3, 0), (2, 2, 1, 1, 1, 0),
    ]
    shapes = [(2, 3, 7, 9), (1, 2, 8, 8), (2, 1, 11, 6)]
    ci = 0
    for op in ('max_pool2d', 'avg_pool2d'):
        for (kh, kw, sh, sw, ph, pw) in pool_cfgs:
            for si, shape in enumerate(shapes):
                if shape[2] + 2 * ph < kh or shape[3] + 2 * pw < kw:
                    continue
                dts = floats + (['i32', 'u8', 'i64', 'u32', 'i16'] if op == 'max_pool2d' else [])
                for dt in dts:
                    ci += 1
                    variant = variants[ci % len(variants)] if dt in ('f32', 'f64') or ci % 3 == 0 else 'contig'
                    cips = [True, False] if op == 'avg_pool2d' else [False]
                    for cip in cips:
                        x = g.values(shape, dt, nan=(op == 'max_pool2d' and dt in ('f32', 'f64') and si == 0))
                        if op == 'max_pool2d':
                            fn = lambda t: F.max_pool2d(t, (kh, kw), (sh, sw), (ph, pw))
                            params = 'k=%dx%d;s=%dx%d;p=%dx%d' % (kh, kw, sh, sw, ph, pw)
                        else:
                            fn = lambda t: F.avg_pool2d(t, (kh, kw), (sh, sw), (ph, pw), count_include_pad=cip)
                            params = 'k=%dx%d;s=%dx%d;p=%dx%d;cip=%d' % (kh, kw, sh, sw, ph, pw, int(cip))
                        want = run_torch(fn, x, dt)
                        g.case(op, dt, variant, params, g.input_spec(x, dt, variant), want, tol_of(op, dt))
    # every layout for one config per op, f32 and i32 (max) ; broadcast input
    for op in ('max_pool2d', 'avg_pool2d'):
        for dt in (['f32', 'i32'] if op == 'max_pool2d' else ['f32', 'bf16']):
            for variant in variants:
                x = g.values((2, 3, 9, 10), dt)
                if op == 'max_pool2d':
                    fn = lambda t: F.max_pool2d(t, 3, 2, 1)
                    params = 'k=3x3;s=2x2;p=1x1'
                else:
                    fn = lambda t: F.avg_pool2d(t, 3, 2, 1, count_include_pad=False)
                    params = 'k=3x3;s=2x2;p=1x1;cip=0'
                g.case(op, dt, variant, params, g.input_spec(x, dt, variant), run_torch(fn, x, dt), tol_of(op, dt))
            x1 = g.values((1, 3, 6, 7), dt)
            x = np.broadcast_to(x1, (4, 3, 6, 7))
            spec = g.save(g.stored(x1, dt)) + '@b4x3x6x7'
            g.case(op, dt, 'broadcast', params, spec, run_torch(fn, np.ascontiguousarray(x), dt), tol_of(op, dt))
    # f8e4m3 (computed through f32 and rounded once)
    for op in ('max_pool2d', 'avg_pool2d'):
        x = g.values((2, 2, 6, 7), 'f8e4m3')
        fn = (lambda t: F.max_pool2d(t, 2, 1, 1)) if op == 'max_pool2d' else (lambda t: F.avg_pool2d(t, 2, 1, 1))
        params = 'k=2x2;s=1x1;p=1x1' + ('' if op == 'max_pool2d' else ';cip=1')
        g.case(op, 'f8e4m3', 'contig', params, g.input_spec(x, 'f8e4m3', 'contig'), run_torch(fn, x, 'f8e4m3'),
               tol_of(op, 'f8e4m3'))
    # one-element planes, empty batch
    for op in ('max_pool2d', 'avg_pool2d'):
        x = g.values((1, 1, 1, 1), 'f32')
        fn = (lambda t: F.max_pool2d(t, 1)) if op == 'max_pool2d' else (lambda t: F.avg_pool2d(t, 1))
        params = 'k=1x1;s=1x1;p=0x0' + ('' if op == 'max_pool2d' else ';cip=1')
        g.case(op, 'f32', 'contig', params, g.input_spec(x, 'f32', 'contig'), run_torch(fn, x, 'f32'), EXACT)
        x = g.values((0, 2, 5, 5), 'f32')
        fn = (lambda t: F.max_pool2d(t, 2)) if op == 'max_pool2d' else (lambda t: F.avg_pool2d(t, 2))
        params = 'k=2x2;s=2x2;p=0x0' + ('' if op == 'max_pool2d' else ';cip=1')
        g.case(op, 'f32', 'contig', params, g.input_spec(x, 'f32', 'contig'), run_torch(fn, x, 'f32'), EXACT)

    # ---- upsampling: sizes up and down
    up_sizes = [((5, 7), (10, 14)), ((5, 7), (3, 4)), ((4, 6), (9, 13)), ((6, 5), (6, 11)), ((3, 3), (1, 1)),
                ((1, 1), (4, 3)), ((7, 9), (7, 9)), ((8, 6), (3, 17)), ((2, 9), (5, 2))]
    ci = 0
    for (hw, ohw) in up_sizes:
        for dt in floats + ['u8', 'i16', 'i32', 'i64', 'u32', 'f8e4m3']:
            ci += 1
            variant = variants[ci % len(variants)]
            x = g.values((2, 3) + hw, dt)
            fn = lambda t: F.interpolate(t, size=ohw, mode='nearest')
            g.case('nearest2d', dt, variant, 'out=%dx%d' % ohw, g.input_spec(x, dt, variant), run_torch(fn, x, dt),
                   EXACT)
        for dt in floats:
            for ac in (False, True):
                ci += 1
                variant = variants[ci % len(variants)]
                x = g.values((2, 3) + hw, dt)
                fn = lambda t: F.interpolate(t, size=ohw, mode='bilinear', align_corners=ac)
                g.case('bilinear2d', dt, variant, 'out=%dx%d;ac=%d' % (ohw + (int(ac),)),
                       g.input_spec(x, dt, variant), run_torch(fn, x, dt), tol_of('bilinear2d', dt))
    for ac in (False, True):
        x = g.values((1, 2, 5, 6), 'f8e4m3')
        fn = lambda t: F.interpolate(t, size=(9, 4), mode='bilinear', align_corners=ac)
        g.case('bilinear2d', 'f8e4m3', 'contig', 'out=9x4;ac=%d' % ac, g.input_spec(x, 'f8e4m3', 'contig'),
               run_torch(fn, x, 'f8e4m3'), TOL['f8e4m3'])
    # larger scale factors (odd ratios) for nearest's float index rounding
    for (l, ol) in ((3, 7), (7, 3), (5, 16), (16, 5), (1, 5), (6, 12), (10, 10), (13, 29), (29, 13)):
        for dt in ('f32', 'i64', 'u8'):
            ci += 1
            variant = variants[ci % len(variants)]
            x = g.values((2, 3, l), dt)
            fn = lambda t: F.interpolate(t, size=ol, mode='nearest')
            g.case('nearest1d', dt, variant, 'out=%d' % ol, g.input_spec(x, dt, variant), run_torch(fn, x, dt),
                   EXACT)
    for (h, w, oh, ow) in ((37, 41, 100, 77), (100, 77, 37, 41)):
        x = g.values((1, 1, h, w), 'f32')
        fn = lambda t: F.interpolate(t, size=(oh, ow), mode='nearest')
        g.case('nearest2d', 'f32', 'contig', 'out=%dx%d' % (oh, ow), g.input_spec(x, 'f32', 'contig'),
               run_torch(fn, x, 'f32'), EXACT)
        for ac in (False, True):
            fn = lambda t: F.interpolate(t, size=(oh, ow), mode='bilinear', align_corners=ac)
            g.case('bilinear2d', 'f32', 'contig', 'out=%dx%d;ac=%d' % (oh, ow, ac), g.input_spec(x, 'f32', 'contig'),
                   run_torch(fn, x, 'f32'), TOL['f32'])
    # broadcast input, empty batch
    x1 = g.values((1, 2, 4, 5), 'f32')
    x = np.ascontiguousarray(np.broadcast_to(x1, (3, 2, 4, 5)))
    for op, params, fn in (('nearest2d', 'out=7x8', lambda t: F.interpolate(t, size=(7, 8), mode='nearest')),
                           ('bilinear2d', 'out=7x8;ac=0',
                            lambda t: F.interpolate(t, size=(7, 8), mode='bilinear', align_corners=False))):
        spec = g.save(g.stored(x1, 'f32')) + '@b3x2x4x5'
        g.case(op, 'f32', 'broadcast', params, spec, run_torch(fn, x, 'f32'), tol_of(op, 'f32'))
    x = g.values((0, 2, 4, 5), 'f32')
    g.case('nearest2d', 'f32', 'contig', 'out=8x10', g.input_spec(x, 'f32', 'contig'), np.zeros((0, 2, 8, 10)), EXACT)
    g.case('bilinear2d', 'f32', 'contig', 'out=8x10;ac=1', g.input_spec(x, 'f32', 'contig'), np.zeros((0, 2, 8, 10)),
           EXACT)
    n_sections = len(g.lines)
    sweep(g)
    g.write()
    print('gen_pool: %d cases in %s (%d of them from the op-table sweep)' % (len(g.lines), g.dir,
                                                                           len(g.lines) - n_sections))
    return 0


if __name__ == '__main__':
    sys.exit(main())
