#!/usr/bin/env python3
"""Oracle for scans and order (cumsum, cumprod, sort, argsort, topk, var,
std, log_sum_exp, prod, any, all): numpy / torch compute what wick must return.

    /usr/bin/python3 tests/oracle/gen_scan.py OUTDIR

writes only OUTDIR/scan/manifest.txt and OUTDIR/scan/sNNNNN.npy; read by
tests/test_oracle_scan.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of nine
space-separated fields:

    id op dtype view params input values indices tol

  op      cumsum | cumprod | sort | argsort | topk | var | std | lse |
          prod | any | all
  dtype   the dtype the op runs in (the input file, f64 or i64, is
          converted to it with wk_to_dtype; values are already on its grid)
  view    '+'-joined chain applied to the loaded tensor: c (nothing),
          t (wk_transpose(0, 1)), nD:S:L (wk_narrow), bSHAPE (wk_broadcast_as,
          shape 'x'-joined)
  params  k=v pairs joined by ';': dim=, desc=0|1 (sort, argsort),
          largest=0|1 (topk), k=, dims= ('|'-joined,
          empty for none), keep=0|1, unb=0|1
  values  expected values FILE (f64 for float results, i64 for integer and
          u8 results: compared exactly), '-' when not checked, or !STATUS
          (the call must fail with that status)
  indices expected i64 indices FILE or '-'
  tol     float results: |got - want| <= tol * (1 + |want|); NaN must
          match NaN, inf must match inf

Sort and top-k expectations come from torch.sort(stable=True): ascending
puts NaN last, descending puts NaN first, ties keep index order. Top-k
values are also checked against torch.topk here; top-k indices follow the
explicit rule "ties go to the lower index", i.e. the first k of the stable
sort (torch.topk's own indices are arbitrary among ties).
"""
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x5CA7

INTS = oc.INTS
FLOATS = ['f32', 'f64', 'f16', 'bf16']
NP_INT = oc.NP_INT
F8_GRID = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -1.0, -0.5, -2.0, 448.0, -448.0, 0.015625]


def round_to(x, dt):
    if dt == 'f8':
        return np.clip(np.asarray(x, np.float64), -448.0, 448.0)  # inputs are on its grid; results saturate
    return oc.round_float(x, dt)


def tol_of(dt, op):
    base = {'f64': 1e-12, 'f32': 2e-6, 'f16': 2e-3, 'bf16': 1.6e-2, 'f8': 0.13}[dt] if dt in FLOATS + ['f8'] else 0
    if op in ('var', 'std', 'lse') and dt == 'f32':
        return 2e-5
    return base


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'scan')
        os.makedirs(self.dir, exist_ok=True)
        self.files = oc.NpyFiles(self.dir, 's')
        self.lines = []
        self.rng = np.random.default_rng(SEED)
        self.saved = {}   # id(array) -> file, with the array kept alive

    def save(self, arr):
        return self.files.save(arr)

    def values(self, shape, dt, kind):
        """Base input on dt's grid: 'ties' draws from a few values, 'nan'
        adds NaN, -0.0 and infinities, 'small' keeps products bounded."""
        r = self.rng
        n = int(np.prod(shape)) if len(shape) else 1
        if dt == 'f8':
            return np.array(r.choice(F8_GRID, n), np.float64).reshape(shape)
        if dt in INTS:
            if kind == 'ties':
                v = r.integers(0, 4, n)
            elif kind == 'small':
                v = r.integers(1, 4, n) if dt in ('u8', 'u32') else r.integers(-3, 4, n)
            else:
                info = np.iinfo(NP_INT[dt])
                v = r.integers(int(info.min), int(info.max), n, dtype=np.int64, endpoint=True)
            return np.asarray(v, np.int64).reshape(shape)
        if kind == 'ties':
            v = r.integers(-3, 4, n).astype(np.float64) * 0.5
        elif kind == 'small':
            v = r.uniform(0.5, 1.5, n) * r.choice([-1.0, 1.0], n)
        else:
            v = r.standard_normal(n) * 3
        if kind in ('nan', 'ties') and n >= 4:
            k = max(1, n // 8)
            pos = r.choice(n, k, replace=False)
            specials = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan]
            for i, p in enumerate(pos):
                v[p] = specials[i % len(specials)]
        return round_to(v.reshape(shape), dt)

    def case(self, op, dt, view, params, base, values, indices, tol=None):
        if id(base) not in self.saved:
            self.saved[id(base)] = (self.save(base), base)
        inp = self.saved[id(base)][0]
        vf = values if isinstance(values, str) else self.save(values)
        xf = indices if isinstance(indices, str) else self.save(indices)
        if tol is None:
            tol = tol_of(dt, op)
        pid = '%04d.%s.%s.%s' % (len(self.lines), op, dt, view.replace(':', '-'))
        self.lines.append(' '.join([pid, op, dt, view, params or '-', inp, vf, xf, repr(float(tol))]))

    def write(self):
        oc.write_manifest(self.dir, [' scans and order oracle, seed %#x' % SEED], self.lines)


def apply_view(x, view):
    for v in view.split('+'):
        if v == 'c':
            continue
        if v == 't':
            x = np.swapaxes(x, 0, 1)
        elif v[0] == 'n':
            d, s, l = (int(z) for z in v[1:].split(':'))
            x = np.take(x, np.arange(s, s + l), axis=d)
        elif v[0] == 'b':
            x = np.broadcast_to(x, tuple(int(z) for z in v[1:].split('x')))
    return np.ascontiguousarray(x)


def layouts(shape):
    """(base shape, view) pairs whose view has the logical shape `shape`."""
    out = [(shape, 'c')]
    if len(shape) >= 2:
        s = list(shape)
        s[0], s[1] = s[1], s[0]
        out.append((tuple(s), 't'))
        s = list(shape)
        s[-1] += 3
        out.append((tuple(s), 'n%d:1:%d' % (len(shape) - 1, shape[-1])))
        s = list(shape)
        s[0] = 1
        out.append((tuple(s), 'b' + 'x'.join(str(z) for z in shape)))
    return out


def int_scan(x, dt, prod):
    # numpy wraps silently in the array's own dtype
    a = x.astype(NP_INT[dt])
    with np.errstate(all='ignore'):
        return lambda axis: (np.cumprod if prod else np.cumsum)(a, axis=axis, dtype=NP_INT[dt]).astype(np.int64)


def torch_in(x, dt):
    if dt in ('u32',):
        return torch.from_numpy(x.astype(np.int64))
    if dt in INTS:
        return torch.from_numpy(x.astype(NP_INT[dt]))
    if dt == 'f16':
        return torch.from_numpy(x.astype(np.float16))
    if dt == 'bf16':
        return torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16)
    return torch.from_numpy(x.astype(np.float64))   # f32/f64/f8: exact in f64


def stable_sort(x, dt, dim, desc):
    t = torch_in(x, dt)
    v, i = torch.sort(t, dim=dim, descending=desc, stable=True)
    return v.to(torch.float64).numpy() if dt not in INTS else v.to(torch.int64).numpy(), i.numpy()


def gen_scans(g):
    shapes = [(7,), (3, 5), (4, 3, 6), (2, 300), (1,), (0, 4), (3, 0)]
    for dt in INTS + FLOATS + ['f8']:
        for prod in (False, True):
            op = 'cumprod' if prod else 'cumsum'
            for shape in shapes:
                kind = 'small' if prod else ('wide' if dt in INTS else 'nan')
                if dt == 'f8' and (prod or len(shape) > 2):
                    continue
                for base_shape, view in layouts(shape):
                    if 0 in shape and view != 'c':
                        continue
                    base = g.values(base_shape, dt, kind)
                    x = apply_view(base, view)
                    for dim in range(-1, len(shape)):
                        if dim == -1 and len(shape) == 1:
                            continue
                        if dt in INTS:
                            exp = int_scan(x, dt, prod)(dim)
                        else:
                            with np.errstate(all='ignore'):
                                e = (np.cumprod if prod else np.cumsum)(x, axis=dim)
                            exp = round_to(e, dt)
                        tol = tol_of(dt, op)
                        if dt in ('f16', 'bf16', 'f8'):
                            tol *= 4 if not prod else 8
                        g.case(op, dt, view, 'dim=%d' % dim, base, exp, '-', tol)
    # a long line (chunked path) and a scalar
    for dt in ('f32', 'i32'):
        base = g.values((3 * (1 << 16) + 5,), dt, 'wide' if dt == 'i32' else 'small')
        exp = int_scan(base, dt, False)(0) if dt == 'i32' else round_to(np.cumsum(base), dt)
        g.case('cumsum', dt, 'c', 'dim=0', base, exp, '-', 1e-5)
    g.case('cumsum', 'f32', 'c', 'dim=0', np.array(2.5), np.array(2.5), '-', 0)
    g.case('cumprod', 'i32', 'c', 'dim=-1', np.array(7, np.int64), np.array(7, np.int64), '-', 0)
    g.case('cumsum', 'f32', 'c', 'dim=2', np.zeros((2, 2)), '!INDEX', '-', 0)


def gen_order(g):
    shapes = [(9,), (4, 7), (3, 5, 6), (2, 200), (1,), (0,), (0, 3)]
    for dt in INTS + FLOATS + ['f8']:
        for shape in shapes:
            for kind in ('ties', 'wide' if dt in INTS else 'nan'):
                for base_shape, view in layouts(shape):
                    if 0 in shape and view != 'c':
                        continue
                    if kind != 'ties' and view not in ('c', 't'):
                        continue
                    base = g.values(base_shape, dt, kind)
                    x = apply_view(base, view)
                    for dim in range(len(shape)):
                        for desc in (0, 1):
                            v, i = stable_sort(x, dt, dim, bool(desc))
                            g.case('sort', dt, view, 'dim=%d;desc=%d' % (dim, desc), base, v, i, 0)
                            if kind == 'ties' and view == 'c':
                                g.case('argsort', dt, view, 'dim=%d;desc=%d' % (dim - len(shape), desc), base, '-', i, 0)
                            n = x.shape[dim]
                            for k in sorted({0, 1, min(3, n), n}):
                                if k > n:
                                    continue
                                tv = np.take(v, np.arange(k), axis=dim)
                                ti = np.take(i, np.arange(k), axis=dim)
                                # torch.topk must agree on the values
                                tt = torch_in(x, dt)
                                rv, _ = torch.topk(tt.to(torch.float64) if dt in FLOATS + ['f8'] else tt, k,
                                                   dim=dim, largest=bool(desc), sorted=True)
                                rv = rv.to(torch.float64).numpy()
                                assert np.array_equal(rv, tv.astype(np.float64), equal_nan=True), (dt, shape, k)
                                g.case('topk', dt, view, 'dim=%d;largest=%d;k=%d' % (dim, desc, k), base, tv, ti, 0)
    # a long line through the heap path, with ties, both directions
    for dt in ('f32', 'i32'):
        base = g.values((5000,), dt, 'ties')
        for desc in (0, 1):
            v, i = stable_sort(base, dt, 0, bool(desc))
            g.case('topk', dt, 'c', 'dim=0;largest=%d;k=32' % desc, base, v[:32], i[:32], 0)
            g.case('sort', dt, 'c', 'dim=0;desc=%d' % desc, base, v, i, 0)
    base = g.values((300, 8), 'f32', 'nan')
    for desc in (0, 1):
        v, i = stable_sort(base, 'f32', 0, bool(desc))
        g.case('topk', 'f32', 'c', 'dim=0;largest=%d;k=10' % desc, base, v[:10], i[:10], 0)
    # heap path through strided lines: lanes that are not adjacent (dim 0 of
    # a transposed view) and a strided last dim; ties and NaN
    for kind in ('nan', 'ties'):
        base = g.values((8, 300), 'f32', kind)
        x = apply_view(base, 't')           # (300, 8), lanes 300 apart
        for desc in (0, 1):
            v, i = stable_sort(x, 'f32', 0, bool(desc))
            g.case('topk', 'f32', 't', 'dim=0;largest=%d;k=7' % desc, base, v[:7], i[:7], 0)
        base = g.values((300, 8), 'f32', kind)
        x = apply_view(base, 't')           # (8, 300), dim 1 has stride 8
        for desc in (0, 1):
            v, i = stable_sort(x, 'f32', 1, bool(desc))
            g.case('topk', 'f32', 't', 'dim=1;largest=%d;k=7' % desc, base, v[:, :7], i[:, :7], 0)
    # rank 0 and errors
    g.case('sort', 'f32', 'c', 'dim=0;desc=0', np.array(1.5), np.array(1.5), np.array(0, np.int64), 0)
    g.case('topk', 'f32', 'c', 'dim=0;largest=1;k=5', np.zeros(4), '!ARG', '-', 0)
    g.case('topk', 'f32', 'c', 'dim=0;largest=1;k=-1', np.zeros(4), '!ARG', '-', 0)
    g.case('sort', 'f32', 'c', 'dim=1;desc=0', np.zeros(4), '!INDEX', '-', 0)


def gen_stats(g):
    shapes = [((4, 6), '0'), ((4, 6), '1'), ((4, 6), '0|1'), ((3, 4, 5), '-1|0'), ((3, 4, 5), '1'),
              ((2, 3), ''), ((5,), '0'), ((1, 4), '0'), ((0, 3), '0'), ((0, 3), '1')]
    for dt in FLOATS:
        for shape, dims in shapes:
            for base_shape, view in layouts(shape)[:3]:
                if 0 in shape and view != 'c':
                    continue
                base = g.values(base_shape, dt, 'wide')
                x = apply_view(base, view)
                axes = tuple(int(d) for d in dims.split('|')) if dims else ()
                for keep in (0, 1):
                    for unb in (0, 1):
                        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
                        with np.errstate(all='ignore'):
                            if n - unb <= 0:
                                shp = np.sum(x, axis=axes, keepdims=bool(keep)).shape
                                var = np.full(shp, np.nan)
                            else:
                                var = np.var(x, axis=axes, ddof=unb, keepdims=bool(keep))
                        p = 'dims=%s;keep=%d;unb=%d' % (dims, keep, unb)
                        g.case('var', dt, view, p, base, round_to(var, dt), '-')
                        g.case('std', dt, view, p, base, round_to(np.sqrt(var), dt), '-')
                    with np.errstate(all='ignore'):
                        t = torch.from_numpy(x.astype(np.float64))
                        lse = torch.logsumexp(t, dim=axes, keepdim=bool(keep)).numpy() if axes else x.copy()
                    g.case('lse', dt, view, 'dims=%s;keep=%d' % (dims, keep), base, round_to(lse, dt), '-')
    # -inf rows, +inf, NaN and large values in log_sum_exp
    x = np.array([[-np.inf, -np.inf, -np.inf], [1000.0, 1000.0, -np.inf], [np.inf, 1.0, 2.0],
                  [np.nan, 1.0, 2.0], [-1000.0, -1001.0, -1002.0]])
    for dt in ('f32', 'f64'):
        lse = torch.logsumexp(torch.from_numpy(x), dim=1).numpy()
        g.case('lse', dt, 'c', 'dims=1;keep=0', x, round_to(lse, dt), '-')
    # constant rows: the two-pass var is exact
    x = np.full((3, 1000), 1e4 + 0.1)
    g.case('var', 'f32', 'c', 'dims=1;keep=0;unb=1', round_to(x, 'f32'), np.zeros(3), '-', 1e-6)
    for dt in INTS:
        g.case('var', dt, 'c', 'dims=0;keep=0;unb=1', np.zeros((2, 2), np.int64), '!DTYPE', '-')
        g.case('lse', dt, 'c', 'dims=0;keep=0', np.zeros((2, 2), np.int64), '!DTYPE', '-')


def gen_prod_any_all(g):
    shapes = [((4, 6), '0'), ((4, 6), '1'), ((3, 4, 5), '0|2'), ((3, 4, 5), '-1'), ((2, 3), ''),
              ((2, 3), '0|1'), ((0, 3), '0'), ((0, 3), '1'), ((5,), '0')]
    for dt in INTS + FLOATS + ['f8']:
        for shape, dims in shapes:
            for base_shape, view in layouts(shape)[:3]:
                if 0 in shape and view != 'c':
                    continue
                axes = tuple(int(d) for d in dims.split('|')) if dims else ()
                for op in ('prod', 'any', 'all'):
                    if op == 'prod':
                        if dt == 'f8':
                            continue
                        base = g.values(base_shape, dt, 'small' if dt in FLOATS else 'wide')
                    else:
                        base = g.values(base_shape, dt, 'ties')
                        if dt in FLOATS and base.size:
                            base.reshape(-1)[0] = np.nan
                    x = apply_view(base, view)
                    for keep in (0, 1):
                        if op == 'prod':
                            if dt in INTS:
                                a = x.astype(NP_INT[dt])
                                e = np.prod(a, axis=axes, keepdims=bool(keep), dtype=NP_INT[dt]) if axes else a
                                e = np.asarray(e).astype(np.int64)
                            else:
                                e = np.prod(x, axis=axes, keepdims=bool(keep)) if axes else x
                                e = round_to(e, dt)
                        else:
                            f = np.any if op == 'any' else np.all
                            e = f(x != 0, axis=axes, keepdims=bool(keep)) if axes else (x != 0)
                            e = np.asarray(e).astype(np.int64)
                        g.case(op, dt, view, 'dims=%s;keep=%d' % (dims, keep), base, e, '-',
                               tol_of(dt, 'prod') * 4)
    # integer products wrap; prod over i64 with big factors
    x = np.array([[1 << 40, 1 << 30, 3], [-(1 << 62), 2, -2]], np.int64)
    g.case('prod', 'i64', 'c', 'dims=1;keep=0', x, np.prod(x, axis=1), '-', 0)
    x = np.array([[200, 200, 7]], np.int64)
    g.case('prod', 'u8', 'c', 'dims=1;keep=0', x, np.prod(x.astype(np.uint8), axis=1, dtype=np.uint8).astype(np.int64), '-', 0)
    # long reductions (split path)
    x = g.values((1, 200000), 'f64', 'small')
    x = np.where(np.abs(x) > 1.0, np.sign(x), x)
    x = 1.0 + (x - np.round(x)) * 1e-5
    g.case('prod', 'f64', 'c', 'dims=1;keep=0', x, np.prod(x, axis=1), '-', 1e-9)
    x = np.ones((1, 200000))
    x[0, 123456] = 0
    g.case('all', 'f32', 'c', 'dims=1;keep=0', x, np.array([0]), '-', 0)
    g.case('any', 'f32', 'c', 'dims=1;keep=0', x, np.array([1]), '-', 0)
    x = np.zeros((1, 200000))
    g.case('any', 'f32', 'c', 'dims=1;keep=0', x, np.array([0]), '-', 0)


def main():
    if len(sys.argv) != 2:
        print('usage: gen_scan.py OUTDIR', file=sys.stderr)
        return 2
    torch.manual_seed(0)
    g = Gen(sys.argv[1])
    gen_scans(g)
    gen_order(g)
    gen_stats(g)
    gen_prod_any_all(g)
    g.write()
    print('gen_scan: %d cases' % len(g.lines))
    return 0


if __name__ == '__main__':
    sys.exit(main())
