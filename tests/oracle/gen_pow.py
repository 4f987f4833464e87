#!/usr/bin/env python3
"""Oracle for the binary op pow (wk_pow(a, b), a tensor exponent): numpy
computes what wick must return.

    /usr/bin/python3 tests/oracle/gen_pow.py OUTDIR

writes only OUTDIR/pow/manifest.txt and OUTDIR/pow/pNNNNN.npy; read by
tests/test_oracle_pow.c (WICK_ORACLE_DIR=OUTDIR).

manifest.txt: '#' lines are comments; every other line is one case of five
space-separated fields:

    id dtype a b want tol

  dtype  the dtype both inputs are converted to (wk_to_dtype; the stored
         values are already on its grid)
  a, b   FILE[@VIEW+VIEW...][#DTYPE] (tests/oracle_util.h: ou_load_input):
         c, t (transpose the last two dims), nD:S:L (narrow), bSHAPE
         (broadcast_as), pA:B:... (permute); #DTYPE overrides dtype
  want   expected FILE (f64 for float results, compared with tol; i64 for
         integer results, compared exactly), or !STATUS (the call must fail
         with that status)
  tol    |got - want| <= tol * (1 + |want|); NaN must match NaN, inf the
         same inf

What wick promises (include/wick/wick_ops.h, the pow line):
  floats    C pow; bf16/f16/f8e4m3 compute powf in f32 and round once
  integers  the exact power wrapped to the dtype (numpy's result), 0^0 = 1;
            a negative exponent is WK_ERR_ARG (numpy raises "Integers to
            negative integer powers are not allowed")
Integer expectations are Python's exact pow reduced modulo 2^bits and
checked here against numpy's own wrapped result.

The op table (op_table.def, entry binary.pow, oracle gen_pow) declares the
dtypes and layouts; after the sections, sweep() writes one case for every
declared (dtype, layout) no section covered, and fails on one it cannot
build. test_oracle_pow's test_table_coverage checks the same.
"""
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 0x90E5

INTS = oc.INTS
NP_INT = oc.NP_INT
FLOATS = ['f32', 'f64', 'f16', 'bf16', 'f8e4m3']
BITS = {'u8': 8, 'u32': 32, 'i16': 16, 'i32': 32, 'i64': 64}
SIGNED = {'u8': False, 'u32': False, 'i16': True, 'i32': True, 'i64': True}
TOL = {'f64': 1e-14, 'f32': 1e-6, 'f16': 2e-3, 'bf16': 1.6e-2, 'f8e4m3': 0.13}


def grid(x, dt):
    return oc.round_float(x, dt)


def int_pow(a, b, dt):
    """Exact a^b modulo 2^bits, as the dtype's value (int64 array)."""
    bits = BITS[dt]
    m = 1 << bits
    out = np.empty(np.broadcast(a, b).shape, np.int64)
    flat = out.reshape(-1)
    for k, (x, y) in enumerate(np.broadcast(a, b)):
        assert y >= 0, 'negative integer exponents are error cases'
        r = pow(int(x) % m, int(y), m)
        if SIGNED[dt] and r >= m // 2:
            r -= m
        flat[k] = r
    return out


def float_pow(a, b, dt):
    """C pow in f64; powf in f32 for f32 and the narrow dtypes, rounded once."""
    with np.errstate(all='ignore'):
        if dt == 'f64':
            return np.power(a, b)
        r = np.power(a.astype(np.float32), b.astype(np.float32)).astype(np.float64)
    return r if dt == 'f32' else grid(r, dt)


class Gen:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, 'pow')
        self.files = oc.NpyFiles(self.dir, 'p')
        self.lines = []
        self.rng = np.random.default_rng(SEED)
        self.covered = set()   # ('binary.pow', dtype, layout) of the cases that must succeed

    def case(self, dt, a, av, b, bv, want, tol=None, adt=None, bdt=None):
        """a, b: stored arrays; av, bv: their views; want: array or '!STATUS'."""
        if not isinstance(want, str):
            ins = [(av, oc.view_of(a, av).shape), (bv, oc.view_of(b, bv).shape)]
            for lay in oc.case_layouts(ins, [np.shape(want)]):
                self.covered.add(('binary.pow', dt, lay))
        fa, fb = self.files.save(a), self.files.save(b)
        sa = fa + ('@' + av if av != 'c' else '') + ('#' + adt if adt else '')
        sb = fb + ('@' + bv if bv != 'c' else '') + ('#' + bdt if bdt else '')
        if isinstance(want, str):
            fw = want
        else:
            fw = self.files.save(np.asarray(want, np.int64 if dt in INTS else np.float64))
        if tol is None:
            tol = TOL.get(dt, 0)
        cid = '%04d.%s' % (len(self.lines), dt)
        self.lines.append(' '.join([cid, dt, sa, sb, fw, repr(float(tol))]))

    def bases(self, shape, dt, kind):
        r = self.rng
        n = int(np.prod(shape)) if len(shape) else 1
        if dt in INTS:
            info = np.iinfo(NP_INT[dt])
            if kind == 'wide':
                v = r.integers(int(info.min), int(info.max), n, dtype=np.int64, endpoint=True)
            else:
                v = r.integers(0 if not SIGNED[dt] else -6, 7, n)
            return np.asarray(v, np.int64).reshape(shape)
        if kind == 'neg':   # negative bases: the exponents below are integral
            v = -r.uniform(0.25, 3.0, n)
        else:
            v = r.uniform(-3.0, 3.0, n)
        if n >= 6:
            pos = r.choice(n, 6, replace=False)
            for p, s in zip(pos, [np.nan, 0.0, -0.0, 1.0, -1.0, np.inf]):
                v[p] = s
        return grid(v.reshape(shape), dt)

    def exps(self, shape, dt, kind):
        r = self.rng
        n = int(np.prod(shape)) if len(shape) else 1
        if dt in INTS:
            if kind == 'big' and dt in ('u32', 'i64', 'i32'):
                v = r.integers(0, 1 << 31, n)
            else:
                v = r.integers(0, 70 if BITS[dt] > 8 else 12, n)
            return np.asarray(v, np.int64).reshape(shape)
        if kind == 'int':
            v = r.integers(-4, 5, n).astype(np.float64)
        else:
            v = r.uniform(-2.5, 2.5, n)
        if n >= 5:
            pos = r.choice(n, 5, replace=False)
            for p, s in zip(pos, [np.nan, 0.0, -np.inf, np.inf, 0.5]):
                v[p] = s
        return grid(v.reshape(shape), dt)

    def want(self, a, b, dt):
        if dt in INTS:
            w = int_pow(a, b, dt)
            # numpy's own wrapped result must agree (it is the oracle)
            with np.errstate(all='ignore'):
                npw = np.power(a.astype(NP_INT[dt]), b.astype(NP_INT[dt]))
            assert np.array_equal(npw.astype(np.int64) if SIGNED[dt] else npw.astype(np.uint64).astype(np.int64),
                                  w), dt
            return w
        return float_pow(a, b, dt)

    def write(self):
        oc.write_manifest(self.dir, [' pow oracle, seed %#x' % SEED], self.lines)


# (a stored shape, a view, b stored shape, b view): logical shapes broadcast
LAYOUTS = [
    ((3, 4), 'c', (3, 4), 'c'),
    ((2, 3, 5), 'c', (5,), 'c'),                   # trailing broadcast
    ((3, 1, 4), 'c', (5, 1), 'c'),                 # both stretched -> (3, 5, 4)
    ((4, 3), 't', (3, 4), 'c'),                    # transposed a
    ((3, 7), 'n1:2:4', (4, 3), 't'),               # narrowed a, transposed b
    ((1, 4), 'b3x4', (3, 4), 'c'),                 # broadcast_as view
    ((2, 3, 4), 'p2:0:1', (4, 2, 1), 'c'),         # permuted a, stretched b
    ((300, 9), 'c', (9,), 'c'),                    # long enough to split across threads
    ((5,), 'c', (), 'c'),                          # rank-0 exponent
    ((), 'c', (2, 3), 'c'),                        # rank-0 base
    ((1,), 'c', (1,), 'c'),                        # one element
    ((1, 1), 'c', (), 'c'),
    ((0, 3), 'c', (3,), 'c'),                      # empty
    ((2, 0), 'c', (1, 0), 'c'),
]


def gen_floats(g):
    for dt in FLOATS:
        for sa, av, sb, bv in LAYOUTS:
            a = g.bases(sa, dt, 'mixed')
            b = g.exps(sb, dt, 'real')
            g.case(dt, a, av, b, bv, g.want(oc.view_of(a, av), oc.view_of(b, bv), dt))
        # negative bases to integral exponents: signed results, not NaN
        a = g.bases((6, 8), dt, 'neg')
        b = g.exps((8,), dt, 'int')
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt))
        # C pow's special values, every pair
        sp = grid(np.array([np.nan, 0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, 3.0, -3.0]), dt)
        a = sp.reshape(-1, 1)
        b = sp.reshape(1, -1)
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt))
        # overflow and underflow
        a = grid(np.array([10.0, 0.1, -10.0, 2.0, 1e-3]), dt)
        b = grid(np.array([40.0, 40.0, 41.0, -200.0, 2.0]), dt)
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt))


def gen_ints(g):
    for dt in INTS:
        for sa, av, sb, bv in LAYOUTS:
            a = g.bases(sa, dt, 'small')
            b = g.exps(sb, dt, 'small')
            g.case(dt, a, av, b, bv, g.want(oc.view_of(a, av), oc.view_of(b, bv), dt), 0)
        # wide bases (wrap-around everywhere), then huge exponents
        a = g.bases((7, 9), dt, 'wide')
        b = g.exps((9,), dt, 'small')
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt), 0)
        a = g.bases((40,), dt, 'small')
        b = g.exps((40,), dt, 'big')
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt), 0)
        # 0^0 = 1, x^0 = 1, 0^y = 0, 1^y = 1
        a = np.array([0, 0, 5, 1, 1, 2], np.int64)
        b = np.array([0, 3, 0, 0, 60, 1], np.int64)
        g.case(dt, a, 'c', b, 'c', g.want(a, b, dt), 0)
        if SIGNED[dt]:
            # negative bases: the sign alternates with the exponent's parity
            a = np.array([[-1], [-2], [-3], [-7]], np.int64)
            b = np.array([[0, 1, 2, 3, 4, 5, 6, 63, 64]], np.int64)
            g.case(dt, a, 'c', b, 'c', g.want(a, b, dt), 0)
            # a negative exponent anywhere is an error, as in numpy
            a = np.array([2, 3, 4, 5], np.int64)
            b = np.array([1, 2, -1, 3], np.int64)
            try:
                np.power(a.astype(NP_INT[dt]), b.astype(NP_INT[dt]))
                raise AssertionError('numpy accepted a negative integer power')
            except ValueError:
                pass
            g.case(dt, a, 'c', b, 'c', '!ARG', 0)
            # ... also when it reaches the base through broadcasting, and 1^-1
            g.case(dt, np.array([[1], [-1]], np.int64), 'c', np.array([-1], np.int64), 'c', '!ARG', 0)


def gen_errors(g):
    z = np.zeros((2, 3))
    g.case('f32', z, 'c', z, 'c', '!DTYPE', 0, bdt='f64')      # dtypes must match
    g.case('f32', np.zeros(3), 'c', np.zeros(4), 'c', '!SHAPE', 0)  # no broadcast
    g.case('i32', np.zeros(3, np.int64), 'c', np.zeros(3), 'c', '!DTYPE', 0, bdt='f32')


# the sweep's case per table layout: (a stored shape, a view, b stored shape, b view)
SWEEP = {
    'c': ((3, 4), 'c', (3, 4), 'c'),
    't': ((4, 3), 't', (3, 4), 'c'),
    'n': ((3, 7), 'n1:2:4', (3, 4), 'c'),
    'b': ((1, 4), 'b3x4', (4,), 'c'),
    'tn': ((6, 3), 't+n1:1:4', (3, 4), 'c'),       # (3, 6) transposed, then narrowed
    'p': ((2, 3, 4), 'p2:0:1', (4, 2, 1), 'c'),
    'e': ((0, 3), 'c', (3,), 'c'),
    '1': ((1,), 'c', (1,), 'c'),
    '0': ((), 'c', (), 'c'),
}


def sweep(g):
    """One case for every (dtype, layout) op_table.def declares for
    binary.pow that the sections above did not write (appended after them,
    so their cases and random draws stay the same)."""
    def make_case(name, dt, lay):
        assert name == 'binary.pow', 'gen_pow knows only binary.pow, not ' + name
        if lay in SWEEP:
            sa, av, sb, bv = SWEEP[lay]
            ints = dt in INTS
            a = g.bases(sa, dt, 'small' if ints else 'mixed')
            b = g.exps(sb, dt, 'small' if ints else 'real')
            g.case(dt, a, av, b, bv, g.want(oc.view_of(a, av), oc.view_of(b, bv), dt), 0 if ints else None)
    oc.sweep('gen_pow', g.covered, make_case)


def main():
    if len(sys.argv) != 2:
        print('usage: gen_pow.py OUTDIR', file=sys.stderr)
        return 2
    g = Gen(sys.argv[1])
    gen_floats(g)
    gen_ints(g)
    gen_errors(g)
    n_sections = len(g.lines)
    sweep(g)
    g.write()
    print('gen_pow: %d cases (%d from the op-table sweep)' % (len(g.lines), len(g.lines) - n_sections))
    return 0


if __name__ == '__main__':
    sys.exit(main())
