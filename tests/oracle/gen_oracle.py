#!/usr/bin/env python3
"""wick oracle generator: numpy (and torch for bf16 rounding) compute what
wick must return.

    /usr/bin/python3 tests/oracle/gen_oracle.py OUTDIR

writes OUTDIR/manifest.txt and OUTDIR/aNNNNN.npy (inputs and expected outputs).
tests/test_oracle.c reads them (WICK_ORACLE_DIR=OUTDIR). Nothing generated is
committed; the output is fully determined by SEED.

manifest.txt: '#' lines are comments; every other line is one case with ten
fields separated by single spaces (no field contains a space):

    id op dtype odtype variant params inputs expected atol rtol layouts

  id        unique name, NNNN.<what>
  op        unary.<name> | affine | powf | elu | clamp | binary.<name> |
            binary_scalar.<name> | cmp.<name> | cmp_scalar.<name> | where |
            reduce.<name> | reduce_all.<name> | cast | cat | stack | matmul |
            bmatmul | arange | eye | zeros | ones | full
  dtype     the dtype the op runs in (inputs are converted to it)
  odtype    the dtype the result must have
  variant   layout label for reports (contig, transposed, narrowed, ...)
  params    key=value pairs joined by ';' ('-' if none). dims lists use '|'
            (dims=0|2, dims= for none), shapes use 'x' (shape=2x3, '_' = rank 0)
  inputs    ','-joined input specs ('-' if none): FILE[@VIEW][#DTYPE]
            FILE is loaded with wk_npy_load and converted to DTYPE (default:
            the case dtype) with wk_to_dtype, then VIEW is applied. VIEW is a
            '+'-joined chain, applied left to right:
              c            nothing (contiguous)
              t            wk_transpose(-2, -1)
              nD:S:L       wk_narrow(D, S, L)
              bSHAPE       wk_broadcast_as(SHAPE)
              pA:B:C...    wk_permute(A, B, C, ...)
  expected  FILE (values: f64 for float odtypes, the integer dtype itself for
            integer odtypes; its shape is the shape the result must have), or
            !STATUS: the call must return NULL with that status
            (DTYPE, DIV_ZERO, SHAPE, ARG, INDEX)
  atol rtol |got - want| <= atol + rtol * |want| (NaN must match NaN, inf
            must match inf exactly). Integer results are compared exactly.
  layouts   ','-joined layout variants the case covers (op_table.def's
            letters: c t n b tn p e 1 0), worked out from the input views and
            shapes; test_oracle checks the table's declared layouts against it

Every case's op must be in op_table.def, and a case that must succeed must
run on one of the op's declared dtypes. After the hand-written sections, the
table sweep adds one case for every (op, declared dtype, declared layout) no
section covered (ops of the kinds sweep() knows), and the run fails if any
declared tuple is still uncovered.

bf16 / f8e4m3 inputs are stored as f32 values already on the bf16 / f8 grid
(bf16 rounding: torch; f8e4m3fn rounding: by hand in oracle_common.py, round to nearest
even, saturating at +-448); f16 inputs as <f2. Expected float values are
computed in float64 from those rounded inputs, then rounded to the case dtype.
"""
import math
import os
import sys
import warnings

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402
import op_table  # noqa: E402

# the op-test table (op_table.def): which ops exist, their dtypes, layouts,
# tolerance class and input domain; every case below is checked against it
TABLE = op_table.by_name(op_table.load())

SEED = 0x5EED0AC1E

INTS = ['u8', 'u32', 'i16', 'i32', 'i64']
FLOATS = ['f32', 'f64', 'f16', 'bf16', 'f8e4m3']
ALL = ['u8', 'u32', 'i16', 'i32', 'i64', 'bf16', 'f16', 'f32', 'f64', 'f8e4m3']
NP_INT = oc.NP_INT
round_bf16 = oc.round_bf16
round_f8 = oc.round_f8
STORE = {'f64': np.float64, 'f32': np.float32, 'f16': np.float16, 'bf16': np.float32, 'f8e4m3': np.float32}
STORE.update(NP_INT)
IRANGE = {k: (int(np.iinfo(v).min), int(np.iinfo(v).max)) for k, v in NP_INT.items()}
IBITS = {'u8': 8, 'u32': 32, 'i16': 16, 'i32': 32, 'i64': 64}

# default (atol, rtol) of approximate float results, per result dtype
TOL = {
    'f64': (1e-12, 1e-12),
    'f32': (1e-6, 1e-5),
    'f16': (1e-5, 2e-3),
    'bf16': (1e-4, 1e-2),
    'f8e4m3': (2.0 ** -9, 0.13),   # one grid step: 2^-9 below 2^-6, 1/8 relative above
}
EXACT = (0.0, 0.0)
# f32 transcendental unary ops: a few ulp (vmath is within ~3 ulp of libm; 1e-6 is ~8 ulp)
TRANS_F32 = (1e-7, 1e-6)
# unit roundoff of the accumulator wick uses (f16/bf16/f8 accumulate in f32)
ACC_EPS = {'f64': 2.0 ** -53, 'f32': 2.0 ** -24, 'f16': 2.0 ** -24, 'bf16': 2.0 ** -24, 'f8e4m3': 2.0 ** -24}


def is_int(dt):
    return dt in NP_INT


# ---------------------------------------------------------------- rounding

def quant(x, dt):
    """Values on dt's grid, as float64 (floats) or int64 (ints, must be in range)."""
    if is_int(dt):
        return np.asarray(x).astype(np.int64)
    return oc.round_float(x, dt)


def wrap(v, dt):
    """Python ints (object array or scalars) wrapped modulo 2^bits like C / numpy."""
    bits = IBITS[dt]
    lo = IRANGE[dt][0]
    arr = np.asarray(v, dtype=object)
    f = np.vectorize(lambda z: ((int(z) - lo) % (1 << bits)) + lo, otypes=[object])
    out = f(arr) if arr.size else arr
    return np.asarray(out, dtype=object).astype(NP_INT[dt]) if arr.size else np.zeros(arr.shape, NP_INT[dt])


def shp(shape):
    return 'x'.join(str(int(d)) for d in shape) if len(shape) else '_'


def fmt(v):
    return repr(float(v))


# ---------------------------------------------------------------- the writer

class Oracle:
    def __init__(self, outdir):
        self.dir = outdir
        self.rng = np.random.default_rng(SEED)
        self.lines = []
        self.files = oc.NpyFiles(outdir, 'a')
        self.counts = {}
        self.shapes = {}      # file -> stored shape (for the layouts field)
        self.covered = set()  # (op, dtype, layout) of cases that must succeed

    # ---- files
    def save(self, arr):
        name = self.files.save(arr)
        self.shapes[name] = tuple(np.shape(arr))
        return name

    # ---- values
    def values(self, shape, dt, dom):
        """Random values of shape on dt's grid. dom: (lo, hi) uniform, or
        ('int', lo, hi) integers (inclusive), or ('half', lo, hi) multiples of
        0.5 mixed with uniform, or ('recip',) |x| in [0.1, 10], or
        ('full',) the whole integer range, or a callable(rng, shape)."""
        rng = self.rng
        shape = tuple(int(d) for d in shape)
        if dom is None:   # padding around explicit values
            dom = ('int', 0, 9) if is_int(dt) else (-4, 4)
        if callable(dom):
            raw = dom(rng, shape)
        elif dom[0] == 'int':
            lo, hi = dom[1], dom[2]
            if is_int(dt):
                lo, hi = max(lo, IRANGE[dt][0]), min(hi, IRANGE[dt][1])
            raw = rng.integers(lo, hi, size=shape, endpoint=True)
        elif dom[0] == 'half':
            k = rng.integers(int(dom[1] * 2), int(dom[2] * 2), size=shape, endpoint=True) * 0.5
            u = rng.uniform(dom[1], dom[2], size=shape)
            raw = np.where(rng.random(shape) < 0.5, k, u)
        elif dom[0] == 'recip':
            raw = rng.uniform(0.1, 10, size=shape) * rng.choice([-1.0, 1.0], size=shape)
        elif dom[0] == 'full':
            lo, hi = IRANGE[dt]
            n = int(np.prod(shape)) if shape else 1
            vals = list(rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64))
            edges = [lo, hi, 0, 1, lo + 1, hi - 1] + ([-1] if lo < 0 else [])
            for i in range(min(n, len(edges))):
                vals[int(rng.integers(0, n))] = edges[i]
            raw = np.array(vals, dtype=np.int64).reshape(shape)
        else:
            raw = rng.uniform(dom[0], dom[1], size=shape)
        if is_int(dt):
            return np.asarray(raw).astype(np.int64)
        return quant(raw, dt)

    def tensor(self, shape, dt, dom, view='c', x=None, store_dt=None):
        """One input. Returns (logical values, spec). view: c t n b tn or
        ('p', perm). x: explicit logical values (not with 'b')."""
        shape = tuple(int(d) for d in shape)
        rank = len(shape)
        sdt = store_dt or dt
        rng = self.rng
        if view == 't' and rank < 2:
            view = 'c'
        if view == 'tn' and rank < 2:
            view = 'n'
        if view == 'n' and rank < 1:
            view = 'c'
        if view == 'b' and (x is not None or not any(d > 1 for d in shape)):
            view = 'c'
        if isinstance(view, tuple) and rank < 2:
            view = 'c'
        if x is None and view != 'b':
            x = self.values(shape, dt, dom)
        x = np.asarray(x)
        if view == 'c':
            stored, spec = x, 'c'
        elif view == 't':
            stored, spec = np.swapaxes(x, -1, -2), 't'
        elif view in ('n', 'tn'):
            d = int(rng.integers(0, rank))
            pre, post = int(rng.integers(1, 3)), int(rng.integers(0, 3))
            big = list(shape)
            big[d] += pre + post
            B = self.values(big, dt, dom)
            sl = [slice(None)] * rank
            sl[d] = slice(pre, pre + shape[d])
            B[tuple(sl)] = x
            spec = 'n%d:%d:%d' % (d, pre, shape[d])
            if view == 'tn':
                stored, spec = np.swapaxes(B, -1, -2), 't+' + spec
            else:
                stored = B
        elif view == 'b':
            cand = [i for i, s in enumerate(shape) if s > 1]
            d = int(rng.choice(cand))
            base = list(shape)
            base[d] = 1
            Y = self.values(base, dt, dom)
            x = np.broadcast_to(Y, shape).copy()
            if d == 0 and rank > 1 and rng.random() < 0.5:
                Y = Y.reshape(base[1:])          # broadcast_as adds the leading dim
            stored, spec = Y, 'b' + shp(shape)
        elif isinstance(view, tuple) and view[0] == 'p':
            perm = list(view[1])
            inv = list(np.argsort(perm))
            stored = np.transpose(x, inv)
            spec = 'p' + ':'.join(str(p) for p in perm)
        else:
            raise ValueError(view)
        stored = np.array(stored, order="C", copy=True)
        name = self.save(stored.astype(STORE[sdt]))
        spec = name + '@' + spec
        if store_dt is not None:
            spec += '#' + store_dt
        return x, spec

    # ---- cases
    def case(self, name, op, dt, variant, params, inputs, expected, odt=None, tol=None):
        odt = odt or dt
        if isinstance(expected, str):
            exp = expected
        else:
            e = np.asarray(expected)
            if is_int(odt):
                if e.dtype == object:
                    e = wrap(e, odt)
                e = e.astype(NP_INT[odt])
            else:
                e = e.astype(np.float64)
            exp = self.save(e)
        if tol is None:
            tol = EXACT if is_int(odt) else TOL[odt]
        cid = '%04d.%s' % (len(self.lines), name)
        if params is None or params == '':
            params = '-'
        elif isinstance(params, dict):
            params = ';'.join('%s=%s' % (k, v) for k, v in params.items()) or '-'
        for f in (cid, op, params, variant):
            assert ' ' not in f and f, (cid, f)
        entry = TABLE.get(op)
        if entry is None:
            raise ValueError('%s: op %s is not in op_table.def' % (cid, op))
        if not exp.startswith('!') and dt not in entry['dtype_list']:
            raise ValueError('%s: must succeed on %s, which op_table.def does not declare for %s' % (cid, dt, op))
        lays = self.layouts(inputs, None if exp.startswith('!') else self.shapes[exp])
        if not exp.startswith('!'):
            self.covered.update((op, dt, lay) for lay in lays)
        self.lines.append(' '.join([cid, op, dt, odt, variant, params, ','.join(inputs) or '-', exp,
                                    fmt(tol[0]), fmt(tol[1]), ','.join(lays)]))
        group = op.split('.')[0]
        self.counts[group] = self.counts.get(group, 0) + 1

    def layouts(self, inputs, out_shape):
        """op_table layout letters the inputs (specs) and the result cover."""
        tags = set()
        shapes = [] if out_shape is None else [out_shape]
        for spec in inputs:
            name, _, view = spec.split('#')[0].partition('@')
            s = list(self.shapes[name])
            toks = set()
            for tok in (view or 'c').split('+'):
                if tok == 't':
                    s[-1], s[-2] = s[-2], s[-1]
                elif tok[0] == 'n':
                    d, _, ln = (int(v) for v in tok[1:].split(':'))
                    s[d] = ln
                elif tok[0] == 'b':
                    s = [] if tok[1:] == '_' else [int(v) for v in tok[1:].split('x')]
                elif tok[0] == 'p':
                    s = [s[int(i)] for i in tok[1:].split(':')]
                if tok != 'c':
                    toks.add(tok[0])
            tags |= toks or {'c'}
            if {'t', 'n'} <= toks:
                tags.add('tn')
            shapes.append(tuple(s))
        if not inputs:
            tags.add('c')
        for k, s in enumerate(shapes):
            is_input = k > 0 or out_shape is None    # empty counts on the result too; 0 and 1 on inputs only
            n = int(np.prod(s)) if len(s) else 1
            if n == 0:
                tags.add('e')
            elif len(s) == 0 and is_input:
                tags.add('0')
            elif n == 1 and len(s) and is_input:
                tags.add('1')
        return [t for t in op_table.LAYOUTS if t in tags]

    def write_manifest(self):
        oc.write_manifest(self.dir, [' wick oracle manifest v1 seed=%d cases=%d' % (SEED, len(self.lines)),
                                     ' id op dtype odtype variant params inputs expected atol rtol'], self.lines)


# ---------------------------------------------------------------- op meanings

def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)))


_erf = np.vectorize(math.erf, otypes=[np.float64])


def erf(x):
    x = np.asarray(x, np.float64)
    return _erf(x) if x.size else x.copy()


def gelu_erf(x):
    return 0.5 * x * (1.0 + erf(x * 0.7071067811865476))


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def round_half_away(x):
    """C round(). Not np.sign(x) * np.floor(np.abs(x) + 0.5): in float64
    0.49999999999999994 + 0.5 rounds up to 1.0, so that formula is off by one
    there. Split off the fraction instead (exact for every float)."""
    a = np.abs(x)
    fl = np.floor(a)
    with np.errstate(invalid='ignore'):
        r = fl + ((a - fl) >= 0.5)
    return np.copysign(np.where(np.isfinite(a), r, a), x)


# name: f64 meaning. The input domain and exactness (tol class 'exact':
# compared with 0 tolerance) come from op_table.def.
UNARY_F = {
    'exp': np.exp,
    'log': np.log,
    'sin': np.sin,
    'cos': np.cos,
    'tanh': np.tanh,
    'abs': np.abs,
    'neg': np.negative,
    'recip': lambda x: 1.0 / x,
    'sqr': lambda x: x * x,
    'sqrt': np.sqrt,
    'gelu': gelu_tanh,
    'gelu_erf': gelu_erf,
    'erf': erf,
    'relu': lambda x: np.maximum(x, 0.0),
    'silu': lambda x: x * sigmoid(x),
    'ceil': np.ceil,
    'floor': np.floor,
    'round': round_half_away,
    'sign': np.sign,
    'sigmoid': sigmoid,
}
# name: (f64 meaning, input domain, exact?)
UNARY = {k: (f, op_table.domain(TABLE['unary.' + k]['dom']), op_table.tol_class(TABLE['unary.' + k]) == 'exact')
         for k, f in UNARY_F.items()}
UNARY_ORDER = ['exp', 'log', 'sin', 'cos', 'tanh', 'abs', 'neg', 'recip', 'sqr', 'sqrt', 'gelu', 'gelu_erf',
               'erf', 'relu', 'silu', 'ceil', 'floor', 'round', 'sign', 'sigmoid']
INT_UNARY = {
    'abs': lambda v: abs(v),
    'neg': lambda v: -v,
    'sqr': lambda v: v * v,
    'relu': lambda v: max(v, 0),
    'sign': lambda v: (v > 0) - (v < 0),
    'ceil': lambda v: v,
    'floor': lambda v: v,
    'round': lambda v: v,
}
F8_UNARY = ['exp', 'tanh', 'abs', 'neg', 'sqr', 'sqrt', 'relu', 'ceil', 'floor', 'round', 'sign', 'sigmoid']


def ref(f, x):
    with np.errstate(all='ignore'):
        return f(np.asarray(x, np.float64))


def int_apply(f, x):
    x = np.asarray(x)
    out = np.empty(x.shape, dtype=object)
    for idx in np.ndindex(x.shape):
        out[idx] = f(int(x[idx]))
    return out


def int_binary(op, a, b):
    """Python-int meaning of a binary op (result wrapped later)."""
    a = np.asarray(a)
    b = np.asarray(b)
    shape = np.broadcast_shapes(a.shape, b.shape)
    A = np.broadcast_to(a, shape)
    B = np.broadcast_to(b, shape)
    out = np.empty(shape, dtype=object)
    for idx in np.ndindex(shape):
        x, y = int(A[idx]), int(B[idx])
        if op == 'add':
            r = x + y
        elif op == 'sub':
            r = x - y
        elif op == 'mul':
            r = x * y
        elif op == 'div':
            q = abs(x) // abs(y)
            r = q if (x < 0) == (y < 0) else -q
        elif op == 'maximum':
            r = max(x, y)
        else:
            r = min(x, y)
        out[idx] = r
    return out


def float_binary(op, a, b):
    with np.errstate(all='ignore'):
        if op == 'add':
            return a + b
        if op == 'sub':
            return a - b
        if op == 'mul':
            return a * b
        if op == 'div':
            return a / b
        if op == 'maximum':
            return np.maximum(a, b)
        return np.minimum(a, b)


BINARY = ['add', 'sub', 'mul', 'div', 'maximum', 'minimum']
CMP = {'eq': np.equal, 'ne': np.not_equal, 'lt': np.less, 'le': np.less_equal, 'gt': np.greater,
       'ge': np.greater_equal}


def binary_expect(op, dt, a, b):
    if is_int(dt):
        return int_binary(op, a, b)
    return quant(float_binary(op, np.asarray(a, np.float64), np.asarray(b, np.float64)), dt)


def bin_dom(dt, op, side):
    """Value domain of a binary operand."""
    if is_int(dt):
        if op == 'div' and side == 1:
            def nz(rng, shape):
                v = np.where(rng.random(shape) < 0.5, rng.integers(1, 10, size=shape),
                             rng.integers(1, max(2, IRANGE[dt][1] // 3), size=shape))
                if IRANGE[dt][0] < 0:
                    v = v * rng.choice([-1, 1], size=shape)
                return v
            return nz
        return ('full',)
    if op == 'div' and side == 1:
        return ('recip',)
    return (-10, 10)


# ---------------------------------------------------------------- sections

def gen_unary(o):
    shapes = {'contig': (3, 7), 'transposed': (5, 6), 'narrowed': (4, 6), 'broadcast': (4, 5),
              'tnarrow': (6, 4), 'empty': (0, 3), 'one': (1, 1), 'rank0': ()}
    views = {'contig': 'c', 'transposed': 't', 'narrowed': 'n', 'broadcast': 'b', 'tnarrow': 'tn',
             'empty': 'c', 'one': 'c', 'rank0': 'c'}
    for name in UNARY_ORDER:
        f, dom, exact = UNARY[name]
        for dt in ['f32', 'f64', 'f16', 'bf16', 'f8e4m3']:
            if dt == 'f8e4m3' and name not in F8_UNARY:
                continue
            if dt == 'f8e4m3':
                variants = ['contig', 'transposed']
            elif dt == 'f32':
                variants = list(shapes)
            else:
                variants = ['contig', 'transposed', 'narrowed', 'broadcast', 'rank0']
            for var in variants:
                x, spec = o.tensor(shapes[var], dt, dom, views[var])
                tol = EXACT if exact else TRANS_F32 if dt == 'f32' else TOL[dt]
                o.case('unary.%s.%s.%s' % (name, dt, var), 'unary.' + name, dt, var, None, [spec],
                       quant(ref(f, x), dt), tol=tol)
        # integer dtypes
        for dt in INTS:
            if name in INT_UNARY:
                for var in ['contig', 'transposed', 'narrowed']:
                    x, spec = o.tensor(shapes[var] if var != 'contig' else (4, 6), dt, ('full',), views[var])
                    o.case('unary.%s.%s.%s' % (name, dt, var), 'unary.' + name, dt, var, None, [spec],
                           int_apply(INT_UNARY[name], x))
            else:
                x, spec = o.tensor((2, 3), dt, ('int', 0, 9))
                o.case('unary.%s.%s.err' % (name, dt), 'unary.' + name, dt, 'contig', None, [spec], '!DTYPE')

    # rounding edges (half away from zero, the 0.49999997 trap, big values)
    e32 = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, -3.5, 0.49999997, -0.49999997, 8388607.5, -8388607.5,
           8388609.0, 1e10, -1e10, 0.0, -0.0, 0.25, -0.75, 1.0000001]
    e64 = e32 + [0.49999999999999994, -0.49999999999999994, 4503599627370495.5, -4503599627370495.5,
                 2.0 ** 52 + 1, 1e300]
    for dt, edges in (('f32', e32), ('f64', e64), ('f16', e32[:8] + [0.25, -0.75, 1000.5, -1000.5]),
                      ('bf16', e32[:8] + [0.25, -0.75, 255.5, -255.5])):
        xv = quant(np.array(edges, np.float64), dt)
        for name in ('round', 'floor', 'ceil', 'sign', 'abs', 'neg', 'relu'):
            x, spec = o.tensor(xv.shape, dt, None, 'c', x=xv)
            o.case('unary.%s.%s.edges' % (name, dt), 'unary.' + name, dt, 'contig', None, [spec],
                   quant(ref(UNARY[name][0], x), dt), tol=EXACT)

    # special values: NaN, inf, zero, denormals
    specials = {
        'exp': [np.nan, np.inf, -np.inf, 0.0, -0.0, 88.0, 89.0, -87.0, -200.0, 1e-30],
        'log': [np.nan, np.inf, 0.0, -1.0, 1.0, 1e-40, 1e-45, 3e38, 1e-30],
        'sqrt': [np.nan, np.inf, 0.0, -1.0, 1e-40, 3e38, 4.0],
        'tanh': [np.nan, np.inf, -np.inf, 0.0, 20.0, -20.0, 1e-20, -1e-7],
        'sigmoid': [np.nan, np.inf, -np.inf, 0.0, 100.0, -100.0, 50.0],
        'erf': [np.nan, np.inf, -np.inf, 0.0, 10.0, -10.0, 1e-20],
        'abs': [np.nan, np.inf, -np.inf, -0.0],
        'neg': [np.nan, np.inf, -np.inf, 0.0],
        'recip': [np.inf, -np.inf, 0.0, -0.0, 1e-40],
    }
    for name, vals in specials.items():
        for dt in ('f32', 'f64'):
            xv = quant(np.array(vals, np.float64), dt)
            x, spec = o.tensor(xv.shape, dt, None, 'c', x=xv)
            e = quant(ref(UNARY[name][0], x), dt)
            tol = (1e-300, 1e-12) if dt == 'f64' else (1e-37, 1e-6)
            o.case('unary.%s.%s.specials' % (name, dt), 'unary.' + name, dt, 'contig', None, [spec], e, tol=tol)

    # special values through the narrow float paths (f32 blocks, then rounding)
    narrow_specials = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-6, -3.0, 7.0e4, 2.5, -2.5]
    for dt in ('f16', 'bf16', 'f8e4m3'):
        xv = quant(np.array(narrow_specials), dt)
        for name in ('exp', 'log', 'sqrt', 'tanh', 'sigmoid', 'abs', 'neg', 'relu', 'sign', 'round', 'floor', 'ceil',
                     'recip', 'erf'):
            x, spec = o.tensor(xv.shape, dt, None, 'c', x=xv)
            f, _, exact = UNARY[name]
            o.case('unary.%s.%s.specials' % (name, dt), 'unary.' + name, dt, 'contig', None, [spec],
                   quant(ref(f, x), dt), tol=EXACT if exact else TOL[dt])

    # large: through the thread pool (and the vector tails)
    x, spec = o.tensor((300001,), 'f32', (-10, 10), 'c')
    o.case('unary.exp.f32.large', 'unary.exp', 'f32', 'large', None, [spec], quant(np.exp(x), 'f32'), tol=TRANS_F32)
    x, spec = o.tensor((700, 500), 'f32', (-6, 6), 't')
    o.case('unary.tanh.f32.large_transposed', 'unary.tanh', 'f32', 'large', None, [spec],
           quant(np.tanh(x), 'f32'), tol=TRANS_F32)
    x, spec = o.tensor((1000, 300), 'bf16', (-3, 3), 'b')
    o.case('unary.sigmoid.bf16.large_broadcast', 'unary.sigmoid', 'bf16', 'large', None, [spec],
           quant(sigmoid(x), 'bf16'))


def gen_param(o):
    """affine, powf, elu, clamp."""
    views = [('contig', 'c', (3, 5)), ('transposed', 't', (4, 6)), ('narrowed', 'n', (5, 3)),
             ('rank0', 'c', ()), ('empty', 'c', (2, 0))]
    for dt in FLOATS:
        for var, v, shape in views:
            # affine
            for mul, add in ((1.5, -0.25), (-2.0, 3.0)):
                x, spec = o.tensor(shape, dt, (-4, 4), v)
                m32 = quant(mul, 'f32') if dt != 'f64' else mul
                a32 = quant(add, 'f32') if dt != 'f64' else add
                o.case('affine.%s.%s' % (dt, var), 'affine', dt, var, {'mul': fmt(mul), 'add': fmt(add)}, [spec],
                       quant(x * m32 + a32, dt))
            # powf
            for e, dom in ((2.5, (0.1, 4)), (2.0, (-4, 4)), (0.5, (0, 9)), (-1.0, (0.5, 4)), (3.0, (-3, 3))):
                x, spec = o.tensor(shape, dt, dom, v)
                tol = TOL[dt] if dt != 'f32' else (1e-5, 1e-5)
                o.case('powf.%s.%s' % (dt, var), 'powf', dt, var, {'e': fmt(e)}, [spec],
                       quant(ref(lambda z: np.power(z, e), x), dt), tol=tol)
            # elu
            x, spec = o.tensor(shape, dt, (-4, 4), v)
            o.case('elu.%s.%s' % (dt, var), 'elu', dt, var, {'alpha': fmt(0.75)}, [spec],
                   quant(np.where(x >= 0, x, 0.75 * (np.exp(x) - 1.0)), dt))
            # clamp
            x, spec = o.tensor(shape, dt, ('half', -4, 4), v)
            o.case('clamp.%s.%s' % (dt, var), 'clamp', dt, var, {'lo': fmt(-1.5), 'hi': fmt(2.0)}, [spec],
                   quant(np.clip(x, -1.5, 2.0), dt), tol=EXACT)
    # clamp keeps NaN; bad interval
    for dt in ('f32', 'f64', 'bf16'):
        xv = quant(np.array([np.nan, -5.0, 0.5, 5.0, -np.inf, np.inf]), dt)
        x, spec = o.tensor(xv.shape, dt, None, 'c', x=xv)
        o.case('clamp.%s.nan' % dt, 'clamp', dt, 'contig', {'lo': fmt(-1.0), 'hi': fmt(1.0)}, [spec],
               np.clip(x, -1.0, 1.0), tol=EXACT)
    x, spec = o.tensor((3,), 'f32', (-1, 1))
    o.case('clamp.f32.bad_interval', 'clamp', 'f32', 'contig', {'lo': fmt(2.0), 'hi': fmt(1.0)}, [spec], '!ARG')
    for dt in INTS:
        for var, v, shape in views[:3]:
            # affine: computed in double, converted back truncating toward zero
            x, spec = o.tensor(shape, dt, ('int', -20, 20) if IRANGE[dt][0] < 0 else ('int', 0, 40), v)
            y = np.trunc(x.astype(np.float64) * 0.5 + 3.0)
            o.case('affine.%s.%s' % (dt, var), 'affine', dt, var, {'mul': fmt(0.5), 'add': fmt(3.0)}, [spec],
                   y.astype(np.int64))
            x, spec = o.tensor(shape, dt, ('int', -30, 30) if IRANGE[dt][0] < 0 else ('int', 0, 60), v)
            o.case('affine.%s.%s.int' % (dt, var), 'affine', dt, var, {'mul': fmt(3.0), 'add': fmt(-2.0) if
                   IRANGE[dt][0] < 0 else fmt(2.0)}, [spec],
                   x * 3 + (-2 if IRANGE[dt][0] < 0 else 2))
            # clamp with fractional bounds (rounded inward)
            x, spec = o.tensor(shape, dt, ('full',), v)
            lo, hi = (-100.5, 1000.5) if IRANGE[dt][0] < 0 else (3.5, 200.25)
            o.case('clamp.%s.%s' % (dt, var), 'clamp', dt, var, {'lo': fmt(lo), 'hi': fmt(hi)}, [spec],
                   np.clip(x, math.ceil(lo), math.floor(hi)))
        x, spec = o.tensor((2, 2), dt, ('int', 1, 5))
        o.case('powf.%s.err' % dt, 'powf', dt, 'contig', {'e': '2.0'}, [spec], '!DTYPE')
        x, spec = o.tensor((2, 2), dt, ('int', 1, 5))
        o.case('elu.%s.err' % dt, 'elu', dt, 'contig', {'alpha': '1.0'}, [spec], '!DTYPE')


BIN_SHAPES = [
    # (label, a shape, a view, b shape, b view)
    ('same', (3, 4), 'c', (3, 4), 'c'),
    ('bcast_3x1x5_4x5', (3, 1, 5), 'c', (4, 5), 'c'),
    ('bcast_4x5_3x1x5', (4, 5), 'c', (3, 1, 5), 'c'),
    ('bcast_1_2x3', (1,), 'c', (2, 3), 'c'),
    ('bcast_2x3_1', (2, 3), 'c', (1,), 'c'),
    ('rank0_2x3', (), 'c', (2, 3), 'c'),
    ('2x3_rank0', (2, 3), 'c', (), 'c'),
    ('rank0_rank0', (), 'c', (), 'c'),
    ('transposed_narrowed', (4, 5), 't', (4, 5), 'n'),
    ('narrowed_transposed', (3, 6), 'n', (3, 6), 't'),
    ('broadcastview', (4, 5), 'b', (4, 5), 'c'),
    ('tnarrow_bcast', (2, 5, 4), 'tn', (5, 1), 'c'),
    ('empty', (0, 3), 'c', (1, 3), 'c'),
    ('empty2', (2, 0), 't', (2, 1), 'c'),
    ('one', (1,), 'c', (1, 1), 'c'),
]


def gen_binary(o):
    for op in BINARY:
        for dt in ALL:
            for label, sa, va, sb, vb in BIN_SHAPES:
                if dt in ('f8e4m3', 'u32') and label not in ('same', 'bcast_3x1x5_4x5', 'rank0_2x3',
                                                          'transposed_narrowed', 'empty'):
                    continue
                a, spa = o.tensor(sa, dt, bin_dom(dt, op, 0), va)
                b, spb = o.tensor(sb, dt, bin_dom(dt, op, 1), vb)
                o.case('binary.%s.%s.%s' % (op, dt, label), 'binary.' + op, dt, label, None, [spa, spb],
                       binary_expect(op, dt, a, b), tol=EXACT)
            # scalar right-hand side
            s = (3 if op != 'div' else (-3 if IRANGE[dt][0] < 0 else 3)) if is_int(dt) else \
                (2.5 if op != 'div' else -1.25)
            for var, v, shape in (('contig', 'c', (3, 5)), ('transposed', 't', (4, 3)), ('rank0', 'c', ())):
                a, spa = o.tensor(shape, dt, bin_dom(dt, op, 0), v)
                o.case('binary_scalar.%s.%s.%s' % (op, dt, var), 'binary_scalar.' + op, dt, var, {'s': fmt(s)},
                       [spa], binary_expect(op, dt, a, np.array(s)), tol=EXACT)

    # integer division: truncation toward zero, MIN / -1 wraps, division by zero is an error
    for dt in INTS:
        lo, hi = IRANGE[dt]
        if lo < 0:
            av = [7, -7, 7, -7, 1, -1, 0, lo, lo, hi, hi, lo + 1, 9, -9]
            bv = [2, 2, -2, -2, 3, 3, -5, -1, 1, -1, 2, -1, 10, 10]
        else:
            av = [7, 8, 9, 0, hi, hi, 1, 255]
            bv = [2, 3, 10, 7, 1, 2, 255, 16]
        a, spa = o.tensor((len(av),), dt, None, 'c', x=np.array(av, np.int64))
        b, spb = o.tensor((len(bv),), dt, None, 'c', x=np.array(bv, np.int64))
        o.case('binary.div.%s.trunc_edges' % dt, 'binary.div', dt, 'contig', None, [spa, spb],
               int_binary('div', a, b))
        a, spa = o.tensor((2, 3), dt, ('int', 1, 9))
        bv = np.array([[1, 2, 0], [3, 1, 1]], np.int64)
        b, spb = o.tensor((2, 3), dt, None, 'c', x=bv)
        o.case('binary.div.%s.by_zero' % dt, 'binary.div', dt, 'contig', None, [spa, spb], '!DIV_ZERO')
        a, spa = o.tensor((2, 3), dt, ('int', 1, 9), 't')
        o.case('binary_scalar.div.%s.by_zero' % dt, 'binary_scalar.div', dt, 'transposed', {'s': '0.0'}, [spa],
               '!DIV_ZERO')
        # wrap-around of add / sub / mul at the edges
        a, spa = o.tensor((3, 4), dt, None, 'c', x=np.array([[hi, lo, hi, lo]] * 3, np.int64))
        b, spb = o.tensor((3, 4), dt, None, 'c', x=np.array([[1, -1 if lo < 0 else 1, hi, 2]] * 3, np.int64))
        for op in ('add', 'sub', 'mul'):
            o.case('binary.%s.%s.wrap' % (op, dt), 'binary.' + op, dt, 'contig', None, [spa, spb],
                   int_binary(op, a, b))

    # float division by zero: inf / NaN like IEEE
    for dt in ('f32', 'f64', 'f16', 'bf16'):
        av = quant(np.array([1.0, -1.0, 0.0, 2.0, np.inf]), dt)
        bv = quant(np.array([0.0, 0.0, 0.0, -0.0, np.inf]), dt)
        a, spa = o.tensor(av.shape, dt, None, 'c', x=av)
        b, spb = o.tensor(bv.shape, dt, None, 'c', x=bv)
        o.case('binary.div.%s.by_zero' % dt, 'binary.div', dt, 'contig', None, [spa, spb],
               binary_expect('div', dt, a, b), tol=EXACT)

    # maximum / minimum propagate NaN (np.maximum), contiguous (vector path) and strided
    def nan_dom(rng, shape):
        v = rng.uniform(-5, 5, size=shape)
        v[rng.random(shape) < 0.3] = np.nan
        return v
    for op in ('maximum', 'minimum'):
        for dt in ('f32', 'f64', 'f16', 'bf16', 'f8e4m3'):
            for label, sa, va, sb, vb in (('nan_same', (5, 37), 'c', (5, 37), 'c'),
                                          ('nan_transposed', (6, 5), 't', (6, 5), 'n'),
                                          ('nan_bcast', (4, 1, 3), 'c', (5, 3), 't')):
                a, spa = o.tensor(sa, dt, nan_dom, va)
                b, spb = o.tensor(sb, dt, nan_dom, vb)
                o.case('binary.%s.%s.%s' % (op, dt, label), 'binary.' + op, dt, label, None, [spa, spb],
                       binary_expect(op, dt, a, b), tol=EXACT)
            a, spa = o.tensor((3, 4), dt, nan_dom)
            o.case('binary_scalar.%s.%s.nan_scalar' % (op, dt), 'binary_scalar.' + op, dt, 'contig',
                   {'s': 'nan'}, [spa], np.full((3, 4), np.nan), tol=EXACT)
            a, spa = o.tensor((3, 4), dt, nan_dom)
            o.case('binary_scalar.%s.%s.nan_lhs' % (op, dt), 'binary_scalar.' + op, dt, 'contig',
                   {'s': '1.0'}, [spa], binary_expect(op, dt, a, np.array(1.0)), tol=EXACT)

    # mixed dtypes are an error
    a, spa = o.tensor((2, 2), 'f32', (-1, 1))
    b, spb = o.tensor((2, 2), 'f64', (-1, 1))
    o.case('binary.add.f32.mixed_dtype', 'binary.add', 'f32', 'contig', None, [spa, spb + '#f64'],
           '!DTYPE')
    a, spa = o.tensor((2, 3), 'f32', (-1, 1))
    b, spb = o.tensor((4, 3), 'f32', (-1, 1))
    o.case('binary.add.f32.bad_shapes', 'binary.add', 'f32', 'contig', None, [spa, spb], '!SHAPE')

    # large: broadcast row over 300k elements (threads)
    a, spa = o.tensor((600, 500), 'f32', (-10, 10), 'c')
    b, spb = o.tensor((500,), 'f32', (-10, 10), 'c')
    o.case('binary.add.f32.large_bcast', 'binary.add', 'f32', 'large', None, [spa, spb],
           binary_expect('add', 'f32', a, b), tol=EXACT)
    a, spa = o.tensor((400, 300), 'i32', ('full',), 't')
    b, spb = o.tensor((400, 1), 'i32', ('full',), 'c')
    o.case('binary.mul.i32.large_transposed', 'binary.mul', 'i32', 'large', None, [spa, spb],
           binary_expect('mul', 'i32', a, b))
    a, spa = o.tensor((500, 600), 'f16', cmp_dom('f16'), 't')
    b, spb = o.tensor((600,), 'f16', cmp_dom('f16'), 'c')
    o.case('cmp.lt.f16.large_transposed', 'cmp.lt', 'f16', 'large', None, [spa, spb],
           (a < b).astype(np.uint8), odt='u8')


def cmp_dom(dt):
    if is_int(dt):
        return ('int', 0, 3) if IRANGE[dt][0] == 0 else ('int', -2, 2)
    return ('int', -2, 2) if dt == 'f8e4m3' else (lambda rng, shape: rng.integers(-3, 4, size=shape) * 0.5)


def gen_cmp(o):
    shapes = [('same', (3, 4), 'c', (3, 4), 'c'), ('bcast_3x1x5_4x5', (3, 1, 5), 'c', (4, 5), 'c'),
              ('rank0_2x3', (), 'c', (2, 3), 'c'), ('transposed_narrowed', (4, 5), 't', (4, 5), 'n'),
              ('bview_tn', (3, 4), 'b', (2, 3, 4), 'tn'), ('empty', (0, 2), 'c', (1, 2), 'c')]
    for op, f in CMP.items():
        for dt in ALL:
            for label, sa, va, sb, vb in shapes:
                a, spa = o.tensor(sa, dt, cmp_dom(dt), va)
                b, spb = o.tensor(sb, dt, cmp_dom(dt), vb)
                o.case('cmp.%s.%s.%s' % (op, dt, label), 'cmp.' + op, dt, label, None, [spa, spb],
                       f(a, b).astype(np.uint8), odt='u8')
            s = 1.0 if is_int(dt) else 0.5
            for var, v, shape in (('contig', 'c', (4, 5)), ('transposed', 't', (3, 4))):
                a, spa = o.tensor(shape, dt, cmp_dom(dt), v)
                o.case('cmp_scalar.%s.%s.%s' % (op, dt, var), 'cmp_scalar.' + op, dt, var, {'s': fmt(s)}, [spa],
                       f(a, s).astype(np.uint8), odt='u8')
        # NaN compares false except ne
        for dt in ('f32', 'f64', 'f16', 'bf16'):
            av = quant(np.array([np.nan, np.nan, 1.0, np.inf, -np.inf, 0.0]), dt)
            bv = quant(np.array([np.nan, 1.0, np.nan, np.inf, np.inf, -0.0]), dt)
            a, spa = o.tensor(av.shape, dt, None, 'c', x=av)
            b, spb = o.tensor(bv.shape, dt, None, 'c', x=bv)
            with np.errstate(all='ignore'):
                e = f(a, b).astype(np.uint8)
            o.case('cmp.%s.%s.nan' % (op, dt), 'cmp.' + op, dt, 'contig', None, [spa, spb], e, odt='u8')
    # 64-bit integers compare exactly (not through double)
    big = 2 ** 60
    av = np.array([big, big + 1, -big - 1, 2 ** 63 - 1, -2 ** 63, 5], np.int64)
    bv = np.array([big + 1, big + 1, -big, 2 ** 63 - 2, -2 ** 63 + 1, 5], np.int64)
    for op, f in CMP.items():
        a, spa = o.tensor(av.shape, 'i64', None, 'c', x=av)
        b, spb = o.tensor(bv.shape, 'i64', None, 'c', x=bv)
        o.case('cmp.%s.i64.exact_big' % op, 'cmp.' + op, 'i64', 'contig', None, [spa, spb], f(a, b).astype(np.uint8),
               odt='u8')
    for op in ('maximum', 'minimum', 'sub'):
        a, spa = o.tensor(av.shape, 'i64', None, 'c', x=av)
        b, spb = o.tensor(bv.shape, 'i64', None, 'c', x=bv)
        o.case('binary.%s.i64.exact_big' % op, 'binary.' + op, 'i64', 'contig', None, [spa, spb],
               int_binary(op, a, b))
    # the scalar is converted to the tensor's dtype first: 2.7 on an int tensor compares with 2
    a, spa = o.tensor((3, 4), 'i32', ('int', 0, 4))
    o.case('cmp_scalar.lt.i32.scalar_truncated', 'cmp_scalar.lt', 'i32', 'contig', {'s': '2.7'}, [spa],
           (a < 2).astype(np.uint8), odt='u8')
    a, spa = o.tensor((3, 4), 'f16', (-1, 1))
    s16 = float(np.float16(0.1))
    o.case('cmp_scalar.le.f16.scalar_rounded', 'cmp_scalar.le', 'f16', 'contig', {'s': '0.1'}, [spa],
           (a <= s16).astype(np.uint8), odt='u8')


def gen_where(o):
    cases = [
        ('same', (3, 4), 'c', (3, 4), 'c', (3, 4), 'c'),
        ('bcast_cond', (3, 1), 'c', (3, 4), 'c', (4,), 'c'),
        ('bcast_all', (2, 1, 4), 'c', (3, 1), 'c', (), 'c'),
        ('noncontig', (4, 5), 'n', (4, 5), 't', (4, 5), 'b'),
        ('cond_t', (5, 3), 't', (1, 3), 'c', (5, 3), 'tn'),
        ('empty', (0, 3), 'c', (1, 3), 'c', (3,), 'c'),
        ('rank0', (), 'c', (), 'c', (), 'c'),
    ]
    cdts = ['u8', 'i32', 'i64', 'u32', 'i16']
    for i, dt in enumerate(ALL):
        for j, (label, sc, vc, sa, va, sb, vb) in enumerate(cases):
            cdt = cdts[(i + j) % len(cdts)]
            cdom = ('int', 0, 1) if cdt[0] == 'u' else ('int', -3, 2)
            c, spc = o.tensor(sc, cdt, cdom, vc, store_dt=cdt)
            a, spa = o.tensor(sa, dt, ('full',) if is_int(dt) else (-10, 10), va)
            b, spb = o.tensor(sb, dt, ('full',) if is_int(dt) else (-10, 10), vb)
            e = np.where(c != 0, a, b)
            o.case('where.%s.%s.cond_%s' % (dt, label, cdt), 'where', dt, label, None, [spc, spa, spb],
                   e if is_int(dt) else e.astype(np.float64), tol=EXACT)
    c, spc = o.tensor((2, 2), 'f32', (-1, 1), store_dt='f32')
    a, spa = o.tensor((2, 2), 'f32', (-1, 1))
    b, spb = o.tensor((2, 2), 'f32', (-1, 1))
    o.case('where.f32.float_cond', 'where', 'f32', 'contig', None, [spc, spa, spb], '!DTYPE')
    c, spc = o.tensor((2, 2), 'u8', ('int', 0, 1), store_dt='u8')
    b, spb = o.tensor((2, 2), 'f64', (-1, 1), store_dt='f64')
    o.case('where.f32.mixed_values', 'where', 'f32', 'contig', None, [spc, spa, spb], '!DTYPE')
    b, spb = o.tensor((3, 2), 'f32', (-1, 1))
    o.case('where.f32.bad_shapes', 'where', 'f32', 'contig', None, [spc, spa, spb], '!SHAPE')


def red_expect(op, dt, x, dims, keep):
    """numpy meaning of a reduction; dims None = all (rank 0 result)."""
    axis = tuple(dims) if dims is not None else None
    kd = bool(keep) and dims is not None
    if op in ('argmax', 'argmin'):
        f = np.argmax if op == 'argmax' else np.argmin
        r = f(x, axis=axis[0])
        if kd:
            r = np.expand_dims(r, axis[0])
        return r.astype(np.uint32)
    if is_int(dt):
        if op == 'sum':
            xs = np.asarray(x, dtype=object)
            r = np.sum(xs, axis=axis, keepdims=kd) if xs.size else np.zeros(
                np.sum(np.zeros(x.shape), axis=axis, keepdims=kd).shape, dtype=object)
            return np.asarray(r, dtype=object)
        f = np.max if op == 'max' else np.min
        return np.asarray(f(x, axis=axis, keepdims=kd)).astype(np.int64)
    with np.errstate(all='ignore'):
        f = {'sum': np.sum, 'mean': np.mean, 'max': np.max, 'min': np.min}[op]
        return quant(np.asarray(f(x, axis=axis, keepdims=kd), np.float64), dt)


def red_tol(op, dt, x, dims):
    if is_int(dt) or op in ('max', 'min', 'argmax', 'argmin'):
        return EXACT
    axis = tuple(dims) if dims is not None else None
    s = np.sum(np.abs(x), axis=axis) if x.size else np.zeros(1)
    n = max(1, x.size // max(1, np.asarray(s).size))
    bound = 2.0 * n * ACC_EPS[dt] * (float(np.max(s)) if np.asarray(s).size else 0.0)
    if op == 'mean':
        bound /= n
    atol, rtol = TOL[dt]
    return (atol + bound, rtol)


def gen_reduce(o):
    shape4 = (3, 4, 5, 6)
    plans = [  # (label, shape, view, dims or None, keep)
        ('d1', shape4, 'c', [1], False), ('d1_keep', shape4, 'c', [1], True),
        ('dneg1', shape4, 'c', [-1], False), ('d0_2', shape4, 'c', [0, 2], False),
        ('d2_0_keep', shape4, 'c', [2, 0], True), ('d1_3_neg', shape4, 'c', [-3, 3], False),
        ('dall_list', shape4, 'c', [0, 1, 2, 3], False), ('dall_list_keep', shape4, 'c', [3, 1, 0, 2], True),
        ('none', (4, 5), 'c', [], False), ('all', shape4, 'c', None, False),
        ('transposed_d2', (4, 5, 6), 't', [2], False), ('transposed_d1_keep', (4, 5, 6), 't', [1], True),
        ('transposed_d0_2', (4, 5, 6), 't', [0, 2], False),
        ('narrowed_d1_3', shape4, 'n', [1, 3], False), ('narrowed_all', (5, 7), 'n', None, False),
        ('tnarrow_d0', (5, 6), 'tn', [0], True), ('bview_d0', (4, 5), 'b', [0], False),
        ('perm_d1', (3, 4, 5), ('p', (2, 0, 1)), [1], False),
        ('rank0_all', (), 'c', None, False), ('rank0_none', (), 'c', [], False),
        ('one', (1, 1), 'c', [0, 1], True),
        ('empty_kept', (0, 4), 'c', [1], False), ('rank1', (37,), 'c', [0], False),
    ]
    for dt in ['f32', 'f64', 'f16', 'bf16', 'f8e4m3'] + INTS:
        for op in ['sum', 'mean', 'max', 'min']:
            if op == 'mean' and is_int(dt):
                x, spec = o.tensor((2, 3), dt, ('int', 0, 5))
                o.case('reduce.mean.%s.err' % dt, 'reduce.mean', dt, 'contig', {'dims': '0', 'keep': '0'},
                       [spec], '!DTYPE')
                continue
            for label, shape, view, dims, keep in plans:
                if dt in ('f8e4m3', 'u32', 'i16') and label not in ('d1', 'd0_2', 'all', 'transposed_d2',
                                                                   'narrowed_d1_3', 'rank0_all'):
                    continue
                if is_int(dt):
                    dom = ('full',)
                elif dt == 'f8e4m3':
                    dom = (-2, 2)
                else:
                    dom = (-1, 1) if op in ('sum', 'mean') else ('int', -20, 20)
                x, spec = o.tensor(shape, dt, dom, view)
                e = red_expect(op, dt, x, dims, keep)
                tol = red_tol(op, dt, x, dims)
                if dims is None:
                    o.case('reduce_all.%s.%s.%s' % (op, dt, label), 'reduce_all.' + op, dt, label, None, [spec],
                           e, tol=tol)
                else:
                    o.case('reduce.%s.%s.%s' % (op, dt, label), 'reduce.' + op, dt, label,
                           {'dims': '|'.join(str(d) for d in dims), 'keep': int(keep)}, [spec], e, tol=tol)
        # sum / mean over an empty dim: 0 (mean: NaN); max over an empty dim: error
        x, spec = o.tensor((3, 0), dt, ('int', 0, 3))
        o.case('reduce.sum.%s.empty_reduced' % dt, 'reduce.sum', dt, 'empty', {'dims': '1', 'keep': '0'}, [spec],
               np.zeros(3, np.int64) if is_int(dt) else np.zeros(3))
        x, spec = o.tensor((3, 0), dt, ('int', 0, 3))
        o.case('reduce.max.%s.empty_reduced' % dt, 'reduce.max', dt, 'empty', {'dims': '1', 'keep': '0'}, [spec],
               '!SHAPE')
        # argmax / argmin with ties: first index
        for op in ('argmax', 'argmin'):
            for label, shape, view, d, keep in (('d0', (5, 4, 3), 'c', 0, False), ('d1_keep', (5, 4, 3), 'c', 1, True),
                                                ('dneg1', (5, 4, 3), 'c', -1, False), ('d2', (2, 3, 7), 'c', 2, True),
                                                ('transposed_d1', (4, 6), 't', 1, False),
                                                ('transposed_d0', (4, 6), 't', 0, True),
                                                ('narrowed_d0', (6, 5), 'n', 0, False),
                                                ('rank1', (9,), 'c', 0, False)):
                if dt in ('f8e4m3', 'u32', 'i16') and label not in ('d0', 'dneg1', 'transposed_d1'):
                    continue
                x, spec = o.tensor(shape, dt, ('int', 0, 2) if not is_int(dt) or IRANGE[dt][0] == 0
                                   else ('int', -1, 1), view)
                o.case('reduce.%s.%s.%s' % (op, dt, label), 'reduce.' + op, dt, label,
                       {'dims': str(d), 'keep': int(keep)}, [spec], red_expect(op, dt, x, [d], keep), odt='u32')
        x, spec = o.tensor((3, 4), dt, ('int', 0, 3))
        o.case('reduce.sum.%s.bad_dim' % dt, 'reduce.sum', dt, 'contig', {'dims': '2', 'keep': '0'}, [spec],
               '!INDEX')
        o.case('reduce.max.%s.dim_twice' % dt, 'reduce.max', dt, 'contig', {'dims': '1|-1', 'keep': '0'}, [spec],
               '!ARG')
        o.case('reduce.argmax.%s.two_dims' % dt, 'reduce.argmax', dt, 'contig', {'dims': '0|1', 'keep': '0'},
               [spec], '!ARG')

    # NaN propagates through max / min / argmax (first NaN), inf sums
    for dt in ('f32', 'f64', 'f16', 'bf16'):
        xv = quant(np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, -1.0, 0.0], [np.nan, 1.0, 9.0, 2.0]]), dt)
        for op in ('max', 'min', 'argmax', 'argmin', 'sum'):
            for d in (0, 1):
                x, spec = o.tensor(xv.shape, dt, None, 'c', x=xv)
                o.case('reduce.%s.%s.nan_d%d' % (op, dt, d), 'reduce.' + op, dt, 'contig', {'dims': str(d), 'keep': '0'},
                       [spec], red_expect(op, dt, x, [d], False), odt='u32' if op.startswith('arg') else None,
                       tol=EXACT)

    # f16 / bf16 sums accumulate in f32: 4096 ones is exactly 4096 (an f16 accumulator stops at 2048)
    for dt in ('f16', 'bf16'):
        x, spec = o.tensor((4096,), dt, None, 'c', x=np.ones(4096))
        o.case('reduce_all.sum.%s.4096_ones' % dt, 'reduce_all.sum', dt, 'contig', None, [spec], np.array(4096.0),
               tol=EXACT)
        x, spec = o.tensor((64, 64), dt, None, 't', x=np.ones((64, 64)))
        o.case('reduce.sum.%s.4096_ones' % dt, 'reduce.sum', dt, 'transposed', {'dims': '0|1', 'keep': '1'}, [spec],
               np.full((1, 1), 4096.0), tol=EXACT)
        x, spec = o.tensor((4096,), dt, None, 'c', x=np.ones(4096))
        o.case('reduce_all.mean.%s.4096_ones' % dt, 'reduce_all.mean', dt, 'contig', None, [spec], np.array(1.0),
               tol=EXACT)
    # integer sums wrap in the input dtype
    for dt in INTS:
        lo, hi = IRANGE[dt]
        x, spec = o.tensor((300,), dt, None, 'c', x=np.full(300, hi, np.int64))
        o.case('reduce_all.sum.%s.wrap' % dt, 'reduce_all.sum', dt, 'contig', None, [spec],
               np.array(300 * hi, dtype=object))

    # large: split reductions (few outputs, long rows) through the pool
    x, spec = o.tensor((300000,), 'f32', (0, 1), 'c')
    o.case('reduce_all.sum.f32.large', 'reduce_all.sum', 'f32', 'large', None, [spec], np.array(np.sum(x)),
           tol=(1e-3, 1e-5))
    xv = o.values((300000,), 'f32', (-1, 1))
    xv[70001] = 5.0
    xv[250000] = 5.0
    xv[290000] = -5.0
    xv[10] = -5.0
    x, spec = o.tensor(xv.shape, 'f32', None, 'c', x=xv)   # one input file for the four cases
    for op in ('argmax', 'argmin', 'max', 'min'):
        o.case('reduce.%s.f32.large_ties' % op, 'reduce.' + op, 'f32', 'large', {'dims': '0', 'keep': '0'}, [spec],
               red_expect(op, 'f32', x, [0], False), odt='u32' if op.startswith('arg') else None, tol=EXACT)
    x, spec = o.tensor((300000,), 'bf16', None, 'c', x=np.ones(300000))
    o.case('reduce_all.sum.bf16.large_ones', 'reduce_all.sum', 'bf16', 'large', None, [spec],
           quant(np.array(300000.0), 'bf16'), tol=EXACT)
    x, spec = o.tensor((3, 100000), 'f64', (-1, 1), 't')
    o.case('reduce.mean.f64.large_transposed', 'reduce.mean', 'f64', 'large', {'dims': '1', 'keep': '1'}, [spec],
           red_expect('mean', 'f64', x, [1], True), tol=(1e-13, 1e-12))
    x, spec = o.tensor((2000, 150), 'i64', ('full',), 'c')
    o.case('reduce.sum.i64.large_wrap', 'reduce.sum', 'i64', 'large', {'dims': '0', 'keep': '0'}, [spec],
           red_expect('sum', 'i64', x, [0], False))


def cast_values(src, dst, rng, n):
    """n values representable in src and in range for dst."""
    if is_int(src):
        lo, hi = IRANGE[src]
        if is_int(dst):
            vals = [int(rng.integers(lo, hi, endpoint=True)) for _ in range(n)]
            vals[:4] = [lo, hi, 0, min(hi, 1)]
            return np.array(vals, np.int64)
        lim = {'f16': 60000, 'f8e4m3': 448, 'bf16': 2 ** 62, 'f32': 2 ** 40, 'f64': 2 ** 52}[dst]
        lo2, hi2 = max(lo, -lim), min(hi, lim)
        v = np.array([int(rng.integers(lo2, hi2, endpoint=True)) for _ in range(n)], np.int64)
        v[:3] = [lo2, hi2, 0]
        small = rng.integers(max(lo2, -20), min(hi2, 20), size=n // 2, endpoint=True)
        v[3:3 + len(small)] = small[:max(0, n - 3)]
        return v
    # float source
    if is_int(dst):
        lo, hi = IRANGE[dst]
        top = {'f16': 65504.0, 'f8e4m3': 448.0, 'bf16': 2.0 ** 62, 'f32': 2.0 ** 40, 'f64': 2.0 ** 52}[src]
        lo2, hi2 = max(lo, -top), min(hi, top)
        u = rng.uniform(lo2 if lo2 < 0 else 0, hi2 if hi2 < 1e6 else 1e6, size=n)
        u[: n // 3] = rng.uniform(-50 if lo2 < 0 else 0, 50 if hi2 > 50 else hi2, size=n // 3)
        q = quant(u, src)
        # stay strictly inside the target range after truncation
        q = q[(np.trunc(q) >= lo) & (np.trunc(q) <= hi)]
        extra = quant(np.array([0.0, 0.5, 0.99, 1.5, 2.75] + ([-0.5, -0.99, -1.5, -2.75] if lo < 0 else [])), src)
        return np.concatenate([extra, q])[:n]
    top = {'f16': 60000.0, 'f8e4m3': 440.0, 'bf16': 1e30, 'f32': 1e30, 'f64': 1e30}[dst]
    top = min(top, {'f16': 65504.0, 'f8e4m3': 448.0, 'bf16': 1e30, 'f32': 1e30, 'f64': 1e30}[src])
    mags = np.exp(rng.uniform(np.log(1e-3), np.log(top), size=n))
    v = mags * rng.choice([-1.0, 1.0], size=n)
    v[: n // 3] = rng.uniform(-4, 4, size=n // 3)
    v[0] = 0.0
    return quant(v, src)


def gen_cast(o):
    views = ['c', 't', 'n', 'b', 'tn']
    labels = {'c': 'contig', 't': 'transposed', 'n': 'narrowed', 'b': 'broadcast', 'tn': 'tnarrow'}
    k = 0
    for src in ALL:
        for dst in ALL:
            xv = cast_values(src, dst, o.rng, 24)
            xv = np.resize(xv, 24).reshape(4, 6)
            v = views[k % len(views)]
            k += 1
            if v == 'b':
                v = 'c'
            x, spec = o.tensor(xv.shape, src, None, v, x=xv)
            if is_int(dst):
                if is_int(src):
                    e = x.astype(NP_INT[src]).astype(NP_INT[dst])   # numpy astype wraps
                else:
                    e = np.trunc(x).astype(np.int64)
            else:
                e = quant(x.astype(np.float64), dst) if not (is_int(src) and dst == 'f32') else \
                    x.astype(np.float32).astype(np.float64)
            o.case('cast.%s.%s.%s' % (src, dst, labels[v]), 'cast', src, labels[v], {'to': dst}, [spec], e, odt=dst,
                   tol=EXACT)
        # a broadcast view and a rank-0 and an empty one per source
        xv = cast_values(src, 'f64' if not is_int(src) else 'i64', o.rng, 5)
        x2, spec2 = o.tensor((5,), src, None, 'c', x=xv)
        spec2 = spec2.replace('@c', '@b3x5')
        o.case('cast.%s.f64.broadcast' % src, 'cast', src, 'broadcast', {'to': 'f64'}, [spec2],
               np.broadcast_to(x2.astype(np.float64), (3, 5)), odt='f64', tol=EXACT)
        x, spec = o.tensor((), src, ('int', 0, 9))
        o.case('cast.%s.i32.rank0' % src, 'cast', src, 'rank0', {'to': 'i32'}, [spec], x.astype(np.int64),
               odt='i32')
        x, spec = o.tensor((0, 4), src, ('int', 0, 9))
        o.case('cast.%s.f16.empty' % src, 'cast', src, 'empty', {'to': 'f16'}, [spec], np.zeros((0, 4)), odt='f16')

    # round to nearest even on ties, overflow, NaN
    t16 = [1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), -(1 + 3 * 2 ** -11), 1 + 2 ** -11 + 2 ** -20,
           2 ** -25, 3 * 2 ** -25, 2 ** -24 + 2 ** -25, 2 ** -26, 2 ** -14 - 2 ** -25, 65504.0, 65519.0, 65520.0,
           1e6, -1e6, np.inf, -np.inf, np.nan, 0.0, -0.0, 2049.0, 2051.0, 4097.0, 4099.0]
    tb16 = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 1 + 2 ** -8 + 2 ** -20, 257.0, 259.0, 2 ** -130,
            3 * 2 ** -134, 3.3895e38, 3.4e38, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, 65.5, 65.25]
    t8 = [1.0625, 1.1875, -1.0625, -1.1875, 1000.0, -1000.0, 448.0, 449.0, 463.0, 464.0, 500.0, -465.0,
          np.inf, -np.inf, np.nan, 2.0 ** -10, 3 * 2.0 ** -10, 2.0 ** -6 - 2.0 ** -10, 2.0 ** -12, 0.0, -0.0,
          17.0, 19.0, 240.0, 250.0, 0.0146484375]
    for dst, vals in (('f16', t16), ('bf16', tb16), ('f8e4m3', t8)):
        xv = np.array(vals, np.float32).astype(np.float64)
        for v in ('c', 't'):
            if v == 't':   # the same values as a (2, n/2) transposed view
                x, spec = o.tensor((2, len(vals) // 2), 'f32', None, 't', x=xv.reshape(2, -1))
            else:
                x, spec = o.tensor((len(vals),), 'f32', None, 'c', x=xv)
            with np.errstate(all='ignore'):
                e = np.asarray(x, np.float32).astype(np.float16).astype(np.float64) if dst == 'f16' else quant(x, dst)
            o.case('cast.f32.%s.ties_%s' % (dst, v), 'cast', 'f32', 'ties', {'to': dst}, [spec], e, odt=dst, tol=EXACT)
    # f8e4m3 saturation from every float dtype
    for src in ('f64', 'f16', 'bf16'):
        xv = quant(np.array([1000.0, -1000.0, 449.0, 512.0, -600.0, 448.0, 3.0, np.inf, -np.inf]), src)
        x, spec = o.tensor(xv.shape, src, None, 'c', x=xv)
        o.case('cast.%s.f8e4m3.saturate' % src, 'cast', src, 'contig', {'to': 'f8e4m3'}, [spec], round_f8(x),
               odt='f8e4m3', tol=EXACT)
    # conversions that must round once (a detour through f32 / f64 rounds twice)
    xv = np.array([1 + 2 ** -11 + 2 ** -40, -(1 + 2 ** -11 + 2 ** -40), 2049 + 2 ** -30, 1.0])
    x, spec = o.tensor(xv.shape, 'f64', None, 'c', x=xv)
    o.case('cast.f64.f16.round_once', 'cast', 'f64', 'contig', {'to': 'f16'}, [spec],
           x.astype(np.float16).astype(np.float64), odt='f16', tol=EXACT)
    xv = np.array([1 + 2 ** -4 + 2 ** -30, -(1 + 2 ** -4 + 2 ** -30), 17 + 2 ** -30, 1.0])
    x, spec = o.tensor(xv.shape, 'f64', None, 'c', x=xv)
    o.case('cast.f64.f8e4m3.round_once', 'cast', 'f64', 'contig', {'to': 'f8e4m3'}, [spec], round_f8(x),
           odt='f8e4m3', tol=EXACT)
    xv = np.array([2 ** 60 + 2 ** 36 + 1, -(2 ** 60 + 2 ** 36 + 1), 2 ** 40 + 1, 2 ** 62 + 2 ** 38 + 2 ** 9 + 1],
                  np.int64)
    x, spec = o.tensor(xv.shape, 'i64', None, 'c', x=xv)
    o.case('cast.i64.f32.round_once', 'cast', 'i64', 'contig', {'to': 'f32'}, [spec],
           x.astype(np.float32).astype(np.float64), odt='f32', tol=EXACT)
    # large (threads): a transposed f32 -> f16 cast, a narrowed i64 -> u8 cast
    x, spec = o.tensor((400, 300), 'f32', (-70000, 70000), 't')
    with np.errstate(over='ignore'):
        e = x.astype(np.float32).astype(np.float16).astype(np.float64)
    o.case('cast.f32.f16.large_transposed', 'cast', 'f32', 'large', {'to': 'f16'}, [spec], e, odt='f16', tol=EXACT)
    x, spec = o.tensor((300, 400), 'i64', ('full',), 'n')
    o.case('cast.i64.u8.large_narrowed', 'cast', 'i64', 'large', {'to': 'u8'}, [spec], x.astype(np.uint8), odt='u8')
    # int -> int wraps like numpy astype
    for src, dst in (('i64', 'u8'), ('i32', 'i16'), ('u32', 'i16'), ('i16', 'u32'), ('i64', 'i32'), ('u32', 'i32')):
        xv = cast_values(src, dst, o.rng, 16)
        xv[:4] = [IRANGE[src][0], IRANGE[src][1], 70000 % (IRANGE[src][1] + 1), 255 + 256 * 3]
        x, spec = o.tensor(xv.shape, src, None, 'c', x=xv)
        o.case('cast.%s.%s.wrap' % (src, dst), 'cast', src, 'contig', {'to': dst}, [spec],
               x.astype(NP_INT[src]).astype(NP_INT[dst]), odt=dst)


def gen_join(o):
    dts = ['f32', 'u8', 'bf16', 'i64', 'f16', 'i32']
    base = (2, 3, 4)
    for j, dim in enumerate([0, 1, 2, -1, -2, -3]):
        for i, dt in enumerate(dts):
            dom = ('full',) if is_int(dt) else (-10, 10)
            vs = ['c', 't', 'n', 'tn', 'b']
            xs, specs = [], []
            for k, sz in enumerate((1, 3, 2)):
                sh = list(base)
                sh[dim] = sz
                x, sp = o.tensor(sh, dt, dom, vs[(i + j + k) % len(vs)])
                xs.append(x)
                specs.append(sp)
            o.case('cat.%s.d%d' % (dt, dim), 'cat', dt, 'mixed', {'dim': dim}, specs,
                   np.concatenate(xs, axis=dim), tol=EXACT)
    for dim in [0, 1, 2, 3, -1, -2, -3, -4]:
        for i, dt in enumerate(dts):
            dom = ('full',) if is_int(dt) else (-10, 10)
            vs = ['t', 'n', 'c', 'b', 'tn']
            xs, specs = [], []
            for k in range(3):
                x, sp = o.tensor(base, dt, dom, vs[(i + dim + k) % len(vs)])
                xs.append(x)
                specs.append(sp)
            o.case('stack.%s.d%d' % (dt, dim), 'stack', dt, 'mixed', {'dim': dim}, specs, np.stack(xs, axis=dim),
                   tol=EXACT)
    # edge cases
    for dt in ('f64', 'i16', 'f8e4m3', 'u32'):
        dom = ('full',) if is_int(dt) else (-10, 10)
        a, sa = o.tensor((2, 0, 3), dt, dom)
        b, sb = o.tensor((2, 2, 3), dt, dom, 't')
        c, sc = o.tensor((2, 1, 3), dt, dom, 'n')
        o.case('cat.%s.with_empty' % dt, 'cat', dt, 'empty', {'dim': 1}, [sa, sb, sc], np.concatenate([a, b, c], 1),
               tol=EXACT)
        a, sa = o.tensor((), dt, dom)
        b, sb = o.tensor((), dt, dom)
        o.case('stack.%s.rank0' % dt, 'stack', dt, 'rank0', {'dim': 0}, [sa, sb], np.stack([a, b]), tol=EXACT)
        a, sa = o.tensor((5,), dt, dom, 'n')
        o.case('cat.%s.single' % dt, 'cat', dt, 'narrowed', {'dim': -1}, [sa], a, tol=EXACT)
        a, sa = o.tensor((0, 2), dt, dom)
        b, sb = o.tensor((0, 2), dt, dom)
        o.case('stack.%s.empty' % dt, 'stack', dt, 'empty', {'dim': 1}, [sa, sb], np.stack([a, b], 1), tol=EXACT)
    a, sa = o.tensor((300, 250), 'f32', (-1, 1), 't')
    b, sb = o.tensor((300, 200), 'f32', (-1, 1), 'n')
    o.case('cat.f32.large', 'cat', 'f32', 'large', {'dim': 1}, [sa, sb], np.concatenate([a, b], 1), tol=EXACT)
    a, sa = o.tensor((2, 3), 'f32', (-1, 1))
    b, sb = o.tensor((3, 3), 'f32', (-1, 1))
    o.case('cat.f32.bad_shape', 'cat', 'f32', 'contig', {'dim': 1}, [sa, sb], '!SHAPE')
    o.case('stack.f32.bad_shape', 'stack', 'f32', 'contig', {'dim': 0}, [sa, sb], '!SHAPE')
    o.case('cat.f32.bad_dim', 'cat', 'f32', 'contig', {'dim': 2}, [sa, sa], '!INDEX')
    o.case('stack.f32.bad_dim', 'stack', 'f32', 'contig', {'dim': 3}, [sa, sa], '!INDEX')
    c, sc = o.tensor((2, 3), 'i32', ('int', 0, 3), store_dt='i32')
    o.case('cat.f32.mixed_dtype', 'cat', 'f32', 'contig', {'dim': 0}, [sa, sc], '!DTYPE')
    o.case('stack.f32.mixed_dtype', 'stack', 'f32', 'contig', {'dim': 0}, [sa, sc], '!DTYPE')


def mm_tol(dt, a, b):
    k = a.shape[-1]
    s = np.matmul(np.abs(a), np.abs(b))
    m = float(np.max(s)) if s.size else 0.0
    atol, rtol = TOL[dt]
    return (atol + 2.0 * max(k, 1) * ACC_EPS[dt] * m, rtol)


def gen_matmul(o):
    plans = [  # (label, op, a shape, a view, b shape, b view)
        ('1x1x1', 'matmul', (1, 1), 'c', (1, 1), 'c'),
        ('batch_1x1x1', 'matmul', (1, 1, 1), 'c', (1, 1, 1), 't'),
        ('3x17x5', 'matmul', (3, 17), 'c', (17, 5), 'c'),
        ('a_transposed', 'matmul', (4, 6), 't', (6, 3), 'c'),
        ('b_transposed', 'matmul', (5, 7), 'c', (7, 2), 't'),
        ('both_transposed_batch', 'matmul', (2, 3, 4), 't', (2, 4, 5), 't'),
        ('batch_narrowed', 'matmul', (3, 4, 5), 'n', (3, 5, 2), 'c'),
        ('bview_batch', 'matmul', (2, 3, 5), 'c', (2, 5, 6), 'b'),
        ('perm_batch', 'matmul', (2, 4, 3), ('p', (1, 0, 2)), (2, 3, 5), 'c'),
        ('k0', 'matmul', (3, 0), 'c', (0, 4), 'c'),
        ('k0_batch', 'matmul', (2, 3, 0), 'c', (2, 0, 4), 'c'),
        ('m0', 'matmul', (0, 5), 'c', (5, 3), 'c'),
        ('n0', 'matmul', (2, 5), 'c', (5, 0), 'c'),
        ('33x70x41', 'matmul', (33, 70), 'c', (70, 41), 't'),
        ('bcast_4x3x5_5x2', 'bmatmul', (4, 3, 5), 'c', (5, 2), 'c'),
        ('bcast_2x1x3x4_1x5x4x6', 'bmatmul', (2, 1, 3, 4), 'c', (1, 5, 4, 6), 'c'),
        ('bcast_3x5_4x5x2', 'bmatmul', (3, 5), 't', (4, 5, 2), 'n'),
        ('bcast_same', 'bmatmul', (2, 3, 4), 'c', (2, 4, 2), 't'),
    ]
    for dt in ('f32', 'f64', 'f16', 'bf16'):
        for label, op, sa, va, sb, vb in plans:
            a, spa = o.tensor(sa, dt, (-2, 2), va)
            b, spb = o.tensor(sb, dt, (-2, 2), vb)
            o.case('%s.%s.%s' % (op, dt, label), op, dt, label, None, [spa, spb],
                   quant(np.matmul(a, b), dt), tol=mm_tol(dt, a, b))
        # seed 002: x of (2,4,3,5) narrowed on dim 1 to (2,2,3,5), y (2,2,5,6)
        big = o.values((2, 4, 3, 5), dt, (-2, 2))
        x = big[:, 1:3]
        name = o.save(big.astype(STORE[dt]))
        y, spy = o.tensor((2, 2, 5, 6), dt, (-2, 2))
        o.case('matmul.%s.seed002_narrowed' % dt, 'matmul', dt, 'narrowed', None, [name + '@n1:1:2', spy],
               quant(np.matmul(x, y), dt), tol=mm_tol(dt, x, y))
        a, spa = o.tensor((2, 3, 4), dt, (-1, 1))
        b, spb = o.tensor((3, 4, 2), dt, (-1, 1))
        o.case('matmul.%s.batch_mismatch' % dt, 'matmul', dt, 'contig', None, [spa, spb], '!SHAPE')
        a, spa = o.tensor((2, 3), dt, (-1, 1))
        b, spb = o.tensor((4, 2), dt, (-1, 1))
        o.case('matmul.%s.inner_mismatch' % dt, 'matmul', dt, 'contig', None, [spa, spb], '!SHAPE')
    # IEEE: inf * 0 is NaN, NaN spreads along its row / column (no skipping of zeros)
    for dt in ('f32', 'f64', 'f16', 'bf16'):
        for label, va, vb in (('contig', 'c', 'c'), ('transposed', 't', 't')):
            av = o.values((3, 4), dt, (-2, 2))
            bv = o.values((4, 5), dt, (-2, 2))
            av[0, 1] = np.inf
            av[2, 3] = np.nan
            bv[1, :2] = 0.0
            bv[3, 4] = -np.inf
            a, spa = o.tensor(av.shape, dt, None, va, x=av)
            b, spb = o.tensor(bv.shape, dt, None, vb, x=bv)
            with np.errstate(all='ignore'):
                e = np.einsum('ik,kj->ij', a, b, optimize=False)
            o.case('matmul.%s.inf_nan_%s' % (dt, label), 'matmul', dt, label, None, [spa, spb], quant(e, dt),
                   tol=mm_tol(dt, np.nan_to_num(a, posinf=0, neginf=0), np.nan_to_num(b, posinf=0, neginf=0)))
    for dt in ('f8e4m3',):
        a, spa = o.tensor((3, 4), dt, (-2, 2))
        b, spb = o.tensor((4, 2), dt, (-2, 2), 't')
        o.case('matmul.%s.3x4x2' % dt, 'matmul', dt, 'transposed', None, [spa, spb], quant(np.matmul(a, b), dt),
               tol=mm_tol(dt, a, b))
    for dt in INTS:
        a, spa = o.tensor((2, 3), dt, ('int', 0, 5))
        b, spb = o.tensor((3, 2), dt, ('int', 0, 5))
        o.case('matmul.%s.err' % dt, 'matmul', dt, 'contig', None, [spa, spb], '!DTYPE')
    # larger: blocked GEMM paths and threads
    a, spa = o.tensor((160, 256), 'f32', (-1, 1), 'c')
    b, spb = o.tensor((256, 200), 'f32', (-1, 1), 't')
    o.case('matmul.f32.large_160x256x200', 'matmul', 'f32', 'large', None, [spa, spb], quant(a @ b, 'f32'),
           tol=mm_tol('f32', a, b))
    a, spa = o.tensor((3, 64, 96), 'f64', (-1, 1), 'n')
    b, spb = o.tensor((96, 80), 'f64', (-1, 1), 'c')
    o.case('bmatmul.f64.large_bcast', 'bmatmul', 'f64', 'large', None, [spa, spb], np.matmul(a, b),
           tol=mm_tol('f64', a, b))


def gen_create(o):
    aranges = [(0, 10, 1, 'i32'), (10, 0, -3, 'i64'), (0, 1, 0.1, 'f32'), (0, 1, 0.1, 'f64'), (5, -5, -1.5, 'f32'),
               (-3, 3, 0.5, 'bf16'), (0, 5, 0.5, 'i16'), (0, 256, 1, 'u8'), (2.5, 2.5, 1, 'f32'), (5, 0, 1, 'i32'),
               (0, 10, 2, 'f8e4m3'), (1, 100, 7, 'u32'), (0, 2, 0.25, 'f16'), (-7.5, 7.5, 2.5, 'i64'),
               (100, 0, -0.75, 'f64'), (-1, -10, -1, 'i16'), (0.1, 0.9, 0.2, 'f64'), (0, 1000, 1, 'f16')]
    for start, end, step, dt in aranges:
        n = max(0, int(math.ceil((end - start) / step)))
        v = start + np.arange(n, dtype=np.float64) * step
        e = np.trunc(v).astype(np.int64) if is_int(dt) else quant(v, dt)
        o.case('arange.%s.%g_%g_%g' % (dt, start, end, step), 'arange', dt, 'rank1',
               {'start': fmt(start), 'end': fmt(end), 'step': fmt(step)}, [], e, tol=EXACT)
    o.case('arange.f32.step0', 'arange', 'f32', 'rank1', {'start': '0.0', 'end': '1.0', 'step': '0.0'}, [], '!ARG')
    for dt in ALL:
        for n in (0, 1, 4):
            o.case('eye.%s.%d' % (dt, n), 'eye', dt, 'square', {'n': n}, [], np.eye(n, dtype=np.int64) if is_int(dt)
                   else np.eye(n), tol=EXACT)
        for shape in ((2, 3), (), (0, 5), (3, 1, 2)):
            z = np.zeros(shape, np.int64) if is_int(dt) else np.zeros(shape)
            o.case('zeros.%s.%s' % (dt, shp(shape)), 'zeros', dt, 'create', {'shape': shp(shape)}, [], z, tol=EXACT)
            o.case('ones.%s.%s' % (dt, shp(shape)), 'ones', dt, 'create', {'shape': shp(shape)}, [], z + 1, tol=EXACT)
            val = (7 if IRANGE[dt][0] == 0 else -7) if is_int(dt) else 2.5
            o.case('full.%s.%s' % (dt, shp(shape)), 'full', dt, 'create', {'shape': shp(shape), 'value': fmt(val)}, [],
                   z + val if is_int(dt) else quant(z + val, dt), tol=EXACT)
    for dt, val in (('f16', 0.1), ('bf16', 0.1), ('f8e4m3', 0.1), ('f8e4m3', 1000.0), ('f8e4m3', -1000.0),
                    ('f32', 0.1), ('f16', 1e6)):
        o.case('full.%s.%g' % (dt, val), 'full', dt, 'create', {'shape': '2x2', 'value': fmt(val)}, [],
               quant(np.full((2, 2), val), dt), tol=EXACT)


def rand_shape(rng, rank):
    out = []
    for _ in range(rank):
        r = rng.random()
        out.append(0 if r < 0.04 else 1 if r < 0.2 else int(rng.integers(2, 6)))
    return out


def rand_operand_shape(rng, out):
    k = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.4 else len(out)
    sh = list(out[len(out) - k:])
    return [1 if (d != 0 and rng.random() < 0.25) else d for d in sh]


def rand_view(rng, shape):
    rank = len(shape)
    choices = ['c', 'n', 'b']
    if rank >= 2:
        choices += ['t', 'tn', 'p']
    v = choices[int(rng.integers(0, len(choices)))]
    if v == 'p':
        return ('p', tuple(int(i) for i in rng.permutation(rank)))
    return v


def gen_random(o):
    rng = o.rng
    for i in range(200):
        rank = int(rng.integers(0, 5))
        out = rand_shape(rng, rank)
        sa, sb = rand_operand_shape(rng, out), rand_operand_shape(rng, out)
        if rng.random() < 0.5:
            sa, sb = sb, sa
        dt = ALL[int(rng.integers(0, len(ALL)))]
        op = BINARY[int(rng.integers(0, len(BINARY)))]
        a, spa = o.tensor(sa, dt, bin_dom(dt, op, 0) if is_int(dt) else (-10, 10), rand_view(rng, sa))
        b, spb = o.tensor(sb, dt, bin_dom(dt, op, 1), rand_view(rng, sb))
        o.case('random.%d.%s.%s' % (i, op, dt), 'binary.' + op, dt, 'random', None, [spa, spb],
               binary_expect(op, dt, a, b), tol=EXACT)
    for i in range(40):
        rank = int(rng.integers(0, 5))
        out = rand_shape(rng, rank)
        sa, sb = rand_operand_shape(rng, out), rand_operand_shape(rng, out)
        dt = ALL[int(rng.integers(0, len(ALL)))]
        op = list(CMP)[int(rng.integers(0, len(CMP)))]
        a, spa = o.tensor(sa, dt, cmp_dom(dt), rand_view(rng, sa))
        b, spb = o.tensor(sb, dt, cmp_dom(dt), rand_view(rng, sb))
        o.case('random_cmp.%d.%s.%s' % (i, op, dt), 'cmp.' + op, dt, 'random', None, [spa, spb],
               CMP[op](a, b).astype(np.uint8), odt='u8')
    for i in range(30):
        rank = int(rng.integers(0, 4))
        out = rand_shape(rng, rank)
        sc, sa, sb = (rand_operand_shape(rng, out) for _ in range(3))
        dt = ALL[int(rng.integers(0, len(ALL)))]
        cdt = INTS[int(rng.integers(0, len(INTS)))]
        c, spc = o.tensor(sc, cdt, ('int', 0, 1), rand_view(rng, sc), store_dt=cdt)
        a, spa = o.tensor(sa, dt, ('full',) if is_int(dt) else (-10, 10), rand_view(rng, sa))
        b, spb = o.tensor(sb, dt, ('full',) if is_int(dt) else (-10, 10), rand_view(rng, sb))
        o.case('random_where.%d.%s' % (i, dt), 'where', dt, 'random', None, [spc, spa, spb],
               np.where(c != 0, a, b), tol=EXACT)


# ---------------------------------------------------------------- the table sweep

# layout letter -> (shape, view) of the one input of a unary / reduce sweep case
SWEEP_1 = {'c': ((3, 7), 'c'), 't': ((5, 6), 't'), 'n': ((4, 6), 'n'), 'b': ((4, 5), 'b'), 'tn': ((6, 4), 'tn'),
           'p': ((3, 4, 5), ('p', (2, 0, 1))), 'e': ((0, 3), 'c'), '1': ((1, 1), 'c'), '0': ((), 'c')}
# layout letter -> (a shape, a view, b shape, b view) of a binary / cmp sweep case
SWEEP_2 = {'c': ((3, 4), 'c', (3, 4), 'c'), 't': ((4, 5), 't', (4, 5), 'c'), 'n': ((3, 6), 'n', (3, 6), 'c'),
           'b': ((4, 5), 'b', (4, 5), 'c'), 'tn': ((2, 5, 4), 'tn', (5, 1), 'c'),
           'p': ((3, 4, 5), ('p', (2, 0, 1)), (3, 4, 5), 'c'), 'e': ((0, 3), 'c', (1, 3), 'c'),
           '1': ((1,), 'c', (1, 1), 'c'), '0': ((), 'c', (2, 3), 'c')}
# layout letter -> reduced dims (one dim for argmax / argmin) and keepdim
SWEEP_DIMS = {'c': ([1], False), 't': ([1], False), 'n': ([0], True), 'b': ([0], False), 'tn': ([1], True),
              'p': ([1], False), 'e': ([1], False), '1': ([0], True), '0': ([], False)}
# ('e': over the non-empty dim of a (0, 3) input, so max / min are defined)


def sweep_case(o, e, dt, lay):
    """One case of op e on dt in layout lay, from the table's shapes; False
    when sweep() has no numpy meaning for e's kind."""
    op, kind = e['name'], e['kind']
    name = 'sweep.%s.%s.%s' % (op, dt, lay)
    if kind == 'unary':
        u = op.split('.', 1)[1]
        shape, view = SWEEP_1[lay]
        if is_int(dt):
            x, spec = o.tensor(shape, dt, ('full',), view)
            o.case(name, op, dt, lay, None, [spec], int_apply(INT_UNARY[u], x))
        else:
            f, dom, exact = UNARY[u]
            x, spec = o.tensor(shape, dt, dom, view)
            o.case(name, op, dt, lay, None, [spec], quant(ref(f, x), dt),
                   tol=EXACT if exact else TRANS_F32 if dt == 'f32' else TOL[dt])
        return True
    if kind in ('binary', 'cmp'):
        sub = op.split('.', 1)[1]
        sa, va, sb, vb = SWEEP_2[lay]
        if kind == 'binary':
            a, spa = o.tensor(sa, dt, bin_dom(dt, sub, 0) if is_int(dt) else (-10, 10), va)
            b, spb = o.tensor(sb, dt, bin_dom(dt, sub, 1), vb)
            o.case(name, op, dt, lay, None, [spa, spb], binary_expect(sub, dt, a, b), tol=EXACT)
        else:
            a, spa = o.tensor(sa, dt, cmp_dom(dt), va)
            b, spb = o.tensor(sb, dt, cmp_dom(dt), vb)
            o.case(name, op, dt, lay, None, [spa, spb], CMP[sub](a, b).astype(np.uint8), odt='u8')
        return True
    if kind == 'param':
        shape, view = SWEEP_1[lay]
        if op == 'affine' and is_int(dt):   # computed in double, converted back truncating toward zero
            x, spec = o.tensor(shape, dt, ('int', -20, 20) if IRANGE[dt][0] < 0 else ('int', 0, 40), view)
            o.case(name, op, dt, lay, {'mul': fmt(0.5), 'add': fmt(3.0)}, [spec],
                   np.trunc(x.astype(np.float64) * 0.5 + 3.0).astype(np.int64))
        elif op == 'affine':
            x, spec = o.tensor(shape, dt, (-4, 4), view)
            m, a = (1.5, -0.25) if dt == 'f64' else (quant(1.5, 'f32'), quant(-0.25, 'f32'))
            o.case(name, op, dt, lay, {'mul': fmt(1.5), 'add': fmt(-0.25)}, [spec], quant(x * m + a, dt))
        elif op == 'powf':
            x, spec = o.tensor(shape, dt, (0.1, 4), view)
            o.case(name, op, dt, lay, {'e': fmt(2.5)}, [spec], quant(ref(lambda z: np.power(z, 2.5), x), dt),
                   tol=TOL[dt] if dt != 'f32' else (1e-5, 1e-5))
        elif op == 'elu':
            x, spec = o.tensor(shape, dt, (-4, 4), view)
            o.case(name, op, dt, lay, {'alpha': fmt(0.75)}, [spec],
                   quant(np.where(x >= 0, x, 0.75 * (np.exp(x) - 1.0)), dt))
        elif op == 'clamp' and is_int(dt):   # fractional bounds round inward
            x, spec = o.tensor(shape, dt, ('full',), view)
            lo, hi = (-100.5, 1000.5) if IRANGE[dt][0] < 0 else (3.5, 200.25)
            o.case(name, op, dt, lay, {'lo': fmt(lo), 'hi': fmt(hi)}, [spec],
                   np.clip(x, math.ceil(lo), math.floor(hi)))
        elif op == 'clamp':
            x, spec = o.tensor(shape, dt, ('half', -4, 4), view)
            o.case(name, op, dt, lay, {'lo': fmt(-1.5), 'hi': fmt(2.0)}, [spec], quant(np.clip(x, -1.5, 2.0), dt),
                   tol=EXACT)
        else:
            return False
        return True
    if kind in ('binary_scalar', 'cmp_scalar'):
        sub = op.split('.', 1)[1]
        shape, view = SWEEP_1[lay]
        if kind == 'binary_scalar':
            sc = (3 if sub != 'div' else (-3 if IRANGE[dt][0] < 0 else 3)) if is_int(dt) else \
                (2.5 if sub != 'div' else -1.25)
            a, spa = o.tensor(shape, dt, bin_dom(dt, sub, 0), view)
            o.case(name, op, dt, lay, {'s': fmt(sc)}, [spa], binary_expect(sub, dt, a, np.array(sc)), tol=EXACT)
        else:
            sc = 1.0 if is_int(dt) else 0.5
            a, spa = o.tensor(shape, dt, cmp_dom(dt), view)
            o.case(name, op, dt, lay, {'s': fmt(sc)}, [spa], CMP[sub](a, sc).astype(np.uint8), odt='u8')
        return True
    if kind == 'where':   # the layout goes to the first value operand
        sa, va, sb, _ = SWEEP_2[lay]
        c, spc = o.tensor(sb, 'u8', ('int', 0, 1), 'c', store_dt='u8')
        a, spa = o.tensor(sa, dt, ('full',) if is_int(dt) else (-10, 10), va)
        b, spb = o.tensor(sb, dt, ('full',) if is_int(dt) else (-10, 10), 'c')
        e = np.where(c != 0, a, b)
        o.case(name, op, dt, lay, None, [spc, spa, spb], e if is_int(dt) else e.astype(np.float64), tol=EXACT)
        return True
    if kind == 'cast' and lay != 'b':   # to f64 (f32 from f64): exact from every dtype
        shape, view = SWEEP_1[lay]
        dst = 'f32' if dt == 'f64' else 'f64'
        n = int(np.prod(shape)) if shape else 1
        xv = np.resize(cast_values(dt, dst, o.rng, max(n, 8)), n).reshape(shape)
        x, spec = o.tensor(shape, dt, None, view, x=xv)
        o.case(name, op, dt, lay, {'to': dst}, [spec], quant(np.asarray(x, np.float64), dst), odt=dst, tol=EXACT)
        return True
    if kind in ('reduce', 'reduce_all'):
        sub = op.split('.', 1)[1]
        shape, view = SWEEP_1[lay]
        if sub in ('argmax', 'argmin'):
            dom = ('int', 0, 2) if not is_int(dt) or IRANGE[dt][0] == 0 else ('int', -1, 1)
        elif is_int(dt):
            dom = ('full',)
        elif dt == 'f8e4m3':
            dom = (-2, 2)
        else:
            dom = (-1, 1) if sub in ('sum', 'mean') else ('int', -20, 20)
        x, spec = o.tensor(shape, dt, dom, view)
        odt = 'u32' if sub.startswith('arg') else None
        if kind == 'reduce_all':
            o.case(name, op, dt, lay, None, [spec], red_expect(sub, dt, x, None, False), odt=odt,
                   tol=red_tol(sub, dt, x, None))
            return True
        dims, keep = SWEEP_DIMS[lay]
        o.case(name, op, dt, lay, {'dims': '|'.join(str(d) for d in dims), 'keep': int(keep)}, [spec],
               red_expect(sub, dt, x, dims, keep), odt=odt, tol=red_tol(sub, dt, x, dims))
        return True
    return False


def sweep(o):
    """The table drives the oracle: every (op, declared dtype, declared layout)
    of a gen_oracle op that no section above covered gets a case here; any
    still uncovered (a kind sweep_case does not know) fails the run."""
    added, missing = 0, []
    warnings.simplefilter('ignore', RuntimeWarning)   # numpy's "mean of empty slice": NaN is the meaning
    for e in TABLE.values():
        if e['oracle'] != 'gen_oracle':
            continue
        for dt in e['dtype_list']:
            for lay in e['layout_list']:
                if (e['name'], dt, lay) in o.covered:
                    continue
                if sweep_case(o, e, dt, lay) and (e['name'], dt, lay) in o.covered:
                    added += 1
                else:
                    missing.append('%s/%s/%s' % (e['name'], dt, lay))
    if missing:
        raise SystemExit('gen_oracle: op_table.def declares %d (op, dtype, layout) tuples with no case: %s'
                         % (len(missing), ' '.join(missing)))
    return added


def main():
    if len(sys.argv) != 2:
        sys.stderr.write('usage: gen_oracle.py OUTDIR\n')
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    mpath = os.path.join(outdir, 'manifest.txt')
    if os.path.exists(mpath):      # no stale manifest if this run fails half way
        os.remove(mpath)
    o = Oracle(outdir)
    for section in (gen_unary, gen_param, gen_binary, gen_cmp, gen_where, gen_reduce, gen_cast, gen_join,
                    gen_matmul, gen_create, gen_random):
        section(o)
    nsweep = sweep(o)
    # files of this run were overwritten in place (cheaper than unlink + create);
    # drop only what an earlier, larger run left behind
    for f in os.listdir(outdir):
        if f.startswith('a') and f.endswith('.npy') and f[1:-4].isdigit() and int(f[1:-4]) >= o.files.nfiles:
            os.remove(os.path.join(outdir, f))
    o.write_manifest()
    print('gen_oracle: %d cases (%d from the op-table sweep), %d files in %s (%s)' % (
        len(o.lines), nsweep, o.files.nfiles, outdir, ', '.join('%s %d' % kv for kv in sorted(o.counts.items()))))
    return 0


if __name__ == '__main__':
    sys.exit(main())
