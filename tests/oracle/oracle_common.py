"""Helpers shared by the oracle generators (gen_*.py in this folder).

Not a generator itself (tests/CMakeLists.txt runs every gen_*.py), so it
must not be named gen_*. The generators import it after putting their own
folder first on sys.path:

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import oracle_common as oc

What lives here: the integer dtypes, rounding float64 values onto a wick
float dtype's grid (bf16 and f8e4m3 included), the numbered .npy writer,
the manifest writer, numpy's picture of a view chain, the op-table layouts
a case covers and the op-table sweep that ends each generator. What each manifest line holds stays in its generator.
"""
import os

import numpy as np

import op_table  # beside this file: the generators put this folder on sys.path

try:
    import torch
except ImportError:  # round_bf16 has a numpy fallback that rounds the same way (RNE)
    torch = None

# wick's integer dtypes and their numpy types, in wick's order.
NP_INT = {'u8': np.uint8, 'u32': np.uint32, 'i16': np.int16, 'i32': np.int32, 'i64': np.int64}
INTS = list(NP_INT)


def round_bf16(x):
    """float64 -> values on the bf16 grid (as float64): f64 -> f32 -> bf16,
    round to nearest even, the way torch converts."""
    with np.errstate(all='ignore'):
        f = np.asarray(x, np.float64).astype(np.float32)
    if torch is not None:
        t = torch.from_numpy(np.ascontiguousarray(f).reshape(-1))
        r = t.to(torch.bfloat16).to(torch.float32).numpy().reshape(f.shape)
        return r.astype(np.float64)
    u = np.ascontiguousarray(f).view(np.uint32).astype(np.uint64)
    nan = np.isnan(f)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    r = u.astype(np.uint32).view(np.float32).astype(np.float64)
    return np.asarray(np.where(nan, np.nan, r), np.float64)


def round_f8(x):
    """float64 -> values on the f8e4m3fn grid: bias 7, no inf, max 448,
    subnormal unit 2^-9; round to nearest even, saturate at +-448, NaN stays."""
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    with np.errstate(all='ignore'):
        _, e = np.frexp(a)                     # a = m * 2^e, m in [0.5, 1)
        q = np.ldexp(np.ones_like(a), e - 4)   # grid step 2^(floor(log2 a) - 3)
        q = np.where(a < 2.0 ** -6, 2.0 ** -9, q)
        r = np.minimum(np.round(a / q) * q, 448.0)   # np.round: half to even
    r = np.where(np.isinf(a), 448.0, r)
    return np.asarray(np.where(np.isnan(x), np.nan, np.copysign(r, x)), np.float64)


def round_float(x, dt):
    """float64 values of x rounded onto float dtype dt's grid (f64, f32, f16
    via f64 -> dt; bf16 via f32; f8e4m3 saturating), as float64."""
    x = np.asarray(x, np.float64)
    with np.errstate(all='ignore'):
        if dt == 'f64':
            return x.copy()
        if dt == 'f32':
            return x.astype(np.float32).astype(np.float64)
        if dt == 'f16':
            return x.astype(np.float16).astype(np.float64)
    if dt == 'bf16':
        return round_bf16(x)
    if dt == 'f8e4m3':
        return round_f8(x)
    raise ValueError('not a float dtype: %r' % (dt,))


class NpyFiles:
    """Numbered .npy files PREFIXnnnnn.npy in one folder (created if needed)."""

    def __init__(self, folder, prefix):
        self.dir = folder
        self.prefix = prefix
        self.nfiles = 0
        os.makedirs(folder, exist_ok=True)

    def save(self, arr):
        """Writes arr (C order, rank 0 kept) as the next file; returns its name."""
        name = '%s%05d.npy' % (self.prefix, self.nfiles)
        self.nfiles += 1
        np.save(os.path.join(self.dir, name), np.array(arr, order='C', copy=True))
        return name


def write_manifest(folder, header, lines):
    """folder/manifest.txt: the '#' comment lines of header (strings without
    the '#'), then one line per case."""
    with open(os.path.join(folder, 'manifest.txt'), 'w') as f:
        for h in header:
            f.write('#' + h + '\n')
        for line in lines:
            f.write(line + '\n')


def view_of(x, view):
    """numpy's picture of the view chain ou_apply_view (tests/oracle_util.c)
    builds from VIEW+VIEW...: c (none), t (the last two dims swapped),
    nD:S:L (narrow), bSHAPE (broadcast_to), pA:B:C (permute). A view, not a
    copy; rank 0 stays rank 0."""
    for v in view.split('+'):
        if v == 'c':
            continue
        if v == 't':
            x = np.swapaxes(x, -2, -1)
        elif v[0] == 'n':
            d, s, l = (int(z) for z in v[1:].split(':'))
            x = np.take(x, np.arange(s, s + l), axis=d)
        elif v[0] == 'b':
            x = np.broadcast_to(x, tuple(int(z) for z in v[1:].split('x')))
        elif v[0] == 'p':
            x = np.transpose(x, tuple(int(z) for z in v[1:].split(':')))
    return x


def case_layouts(inputs, out_shapes):
    """The op-table layouts one case covers, as op_table.c's ot_case_layouts
    works them out (the C coverage test checks the same): inputs are
    (view chain, logical shape) pairs of the present inputs; each one's view
    letters (t n b p; tn for t and n on one input; c without a view), e for a
    0-size input or result, 0 / 1 for a rank-0 / one-element input; c for a
    case without inputs."""
    lays = set() if inputs else {'c'}
    for view, shape in inputs:
        own = {v[0] for v in view.split('+') if v and v[0] in 'tnbp'}
        if 't' in own and 'n' in own:
            own.add('tn')
        lays |= own or {'c'}
        n = int(np.prod(shape)) if len(shape) else 1
        if n == 0:
            lays.add('e')
        elif len(shape) == 0:
            lays.add('0')
        elif n == 1:
            lays.add('1')
    if any(int(np.prod(s)) == 0 for s in out_shapes):
        lays.add('e')
    return lays


def sweep(oracle, covered, make_case):
    """The op-table sweep every generator ends with: make_case(name, dtype,
    layout) for each (op, dtype, layout) op_table.def declares for the
    entries whose oracle is `oracle` that `covered` (a set of such triples,
    which make_case's cases add to) lacks. One still uncovered after it (an
    op or layout make_case cannot build) fails the run, naming them all."""
    missing = []
    for e in op_table.load():
        if e['oracle'] != oracle:
            continue
        for dt in e['dtype_list']:
            for lay in e['layout_list']:
                if (e['name'], dt, lay) in covered:
                    continue
                make_case(e['name'], dt, lay)
                if (e['name'], dt, lay) not in covered:
                    missing.append('%s %s %s' % (e['name'], dt, lay))
    if missing:
        raise SystemExit('%s: declared in op_table.def but no case: %s' % (oracle, ', '.join(missing)))
