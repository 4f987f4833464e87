#!/usr/bin/env python3
"""Oracle cases for the indexing ops (torch 1.13 / numpy 1.24 compute them).

    /usr/bin/python3 tests/oracle/gen_indexing.py OUTDIR

writes only OUTDIR/indexing/: manifest.txt and cNNNNN.npy files, read by
tests/test_oracle_indexing.c (WICK_ORACLE_DIR=OUTDIR). Fully determined by SEED.

manifest.txt: '#' lines are comments; every other line has 7 fields separated
by single spaces:

    id op dtype variant params inputs expected

  op       index_select | embedding | gather | scatter | scatter_add |
           scatter_ | scatter_add_ (in place into input 0, which may be a view)
           | index_add | slice_scatter | flip | roll | repeat | pad_zeros |
           pad_same | masked_fill
  dtype    value dtype (input 0's and the result's)
  params   k=v;k=v ('-' if none); lists joined by '|': dim, dims, shift, reps,
           left, right, value, start
  inputs   ','-joined FILE[@VIEW][#DTYPE]; without #DTYPE the input is
           converted to the case dtype. VIEW is a '+'-joined chain of
           c | t (transpose -2,-1) | nD:S:L (narrow) | bSHAPE (broadcast_as,
           SHAPE like 2x3) | pA:B:C (permute)
  expected FILE (f64 for float dtypes, i64 for integer dtypes; its shape is the
           result's shape) or !STATUS (DTYPE, SHAPE, INDEX, ARG)
Float results must match within a tolerance that depends on the op (copies:
exactly; additions: TOL_ADD), integer results exactly.
"""
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 20261129
rng = np.random.default_rng(SEED)

VALUE_DTYPES = ['f32', 'f64', 'f16', 'bf16', 'u8', 'u32', 'i16', 'i32', 'i64']
INTS = oc.NP_INT
STORE = {'f32': np.float32, 'f64': np.float64, 'f16': np.float16, 'bf16': np.float32}
STORE.update(INTS)
TORCH_FLOAT = {'f32': torch.float32, 'f64': torch.float64, 'f16': torch.float16, 'bf16': torch.bfloat16}
IDX = ['u8', 'u32', 'i32', 'i64']


class Out:
    def __init__(self, root):
        self.dir = os.path.join(root, 'indexing')
        self.files = oc.NpyFiles(self.dir, 'c')
        self.lines = []
        self.ncase = 0

    def save(self, arr):
        return self.files.save(arr)

    def case(self, what, op, dt, variant, params, inputs, expected):
        cid = '%04d.%s' % (self.ncase, what)
        self.ncase += 1
        p = ';'.join('%s=%s' % kv for kv in params.items()) if params else '-'
        self.lines.append(' '.join([cid, op, dt, variant, p, ','.join(inputs) if inputs else '-', expected]))

    def finish(self):
        oc.write_manifest(self.dir, [' indexing oracle cases, seed %d' % SEED], self.lines)


def values(shape, dt):
    """Random values exactly representable in dt, as float64 / int64."""
    if dt in INTS:
        if dt == 'u8':
            return rng.integers(0, 256, shape).astype(np.int64)
        if dt == 'u32':
            return rng.integers(0, 2 ** 32, shape, dtype=np.int64)
        info = np.iinfo(INTS[dt])
        big = rng.integers(int(info.min), int(info.max), shape, dtype=np.int64, endpoint=True)
        small = rng.integers(-50, 50, shape)
        return np.where(rng.random(shape) < 0.5, big, small).astype(np.int64)
    x = rng.standard_normal(shape) * 4
    return to_grid(x, dt)


def to_grid(x, dt):
    if dt == 'f64':
        return np.asarray(x, np.float64)
    return torch.tensor(np.asarray(x, np.float64)).to(TORCH_FLOAT[dt]).to(torch.float64).numpy()


def store_value(x, dt):
    return np.asarray(x).astype(STORE[dt])


def expected_arr(x, dt):
    x = np.asarray(x)
    if dt in INTS:
        # wrap into dt, then widen to i64
        return np.asarray(x, dtype=np.int64).astype(INTS[dt]).astype(np.int64)
    return np.asarray(x, np.float64)


def spec(o, arr, view='c', dt=None):
    name = o.save(arr)
    s = name if view == 'c' else name + '@' + view
    return s + ('#' + dt if dt else '')


def layout(o, x, variant, stored_dt, tag=None):
    """Store x (numpy, already in its final values) so that loading + VIEW
    gives x. Returns the input spec."""
    x = np.asarray(x)
    arr = lambda a: a.astype(STORE[stored_dt]) if stored_dt in STORE else a
    if variant == 'c' or x.ndim == 0:
        return spec(o, arr(x), 'c', tag)
    if variant == 't' and x.ndim >= 2:
        return spec(o, arr(np.ascontiguousarray(np.swapaxes(x, -1, -2))), 't', tag)
    if variant == 'n':
        pad_shape = list(x.shape)
        pad_shape[0] += 3
        big = np.zeros(pad_shape, dtype=x.dtype)
        big[1:1 + x.shape[0]] = x
        return spec(o, arr(big), 'n0:1:%d' % x.shape[0], tag)
    if variant == 'tn' and x.ndim >= 2:
        sw = np.swapaxes(x, -1, -2)
        pad_shape = list(sw.shape)
        pad_shape[-1] += 2
        big = np.zeros(pad_shape, dtype=x.dtype)
        big[..., 1:1 + sw.shape[-1]] = sw
        return spec(o, arr(big), 'n%d:1:%d+t' % (x.ndim - 1, sw.shape[-1]), tag)
    return spec(o, arr(x), 'c', tag)


def shp(s):
    return 'x'.join(str(v) for v in s) if len(s) else '_'


def idx_store(v, idt):
    return np.asarray(v).astype(INTS[idt])


def tadd_float(base, dt, fn):
    """Run an accumulating torch op in dt (floats) and return f64."""
    return fn(torch.tensor(base).to(TORCH_FLOAT[dt])).to(torch.float64).numpy()


def main():
    o = Out(sys.argv[1])
    variants = ['c', 't', 'n', 'tn']

    # ---------------------------------------------------------- index_select
    for dt in VALUE_DTYPES:
        for v in variants:
            for dim in (0, 1, -1):
                x = values((5, 4, 3) if v != 'tn' else (5, 4), dt)
                d = dim % x.ndim
                idt = IDX[(len(o.lines)) % 4]
                ids = rng.integers(0, x.shape[d], 7)
                want = np.take(x, ids, axis=d)
                o.case('isel.%s.%s.d%d' % (dt, v, dim), 'index_select', dt, v, {'dim': dim},
                       [layout(o, x, v, dt), spec(o, idx_store(ids, idt), 'c', idt)], o.save(expected_arr(want, dt)))
    # wide rows: the row-copy (contiguous inner) path, with outer dims
    for dt in ('f32', 'bf16', 'i64', 'u8'):
        for v in ('c', 'n'):
            for dim in (0, 1):
                x = values((3, 5, 20), dt)
                ids = rng.integers(0, x.shape[dim], 9)
                o.case('isel.wide.%s.%s.d%d' % (dt, v, dim), 'index_select', dt, v, {'dim': dim},
                       [layout(o, x, v, dt), spec(o, idx_store(ids, 'i64'), 'c', 'i64')],
                       o.save(expected_arr(np.take(x, ids, axis=dim), dt)))
    x = values((4, 3), 'f32')
    for idt in IDX:
        ids = np.array([3, 0, 3])
        o.case('isel.idt_%s' % idt, 'index_select', 'f32', 'c', {'dim': 0},
               [spec(o, store_value(x, 'f32')), spec(o, idx_store(ids, idt), 'c', idt)],
               o.save(expected_arr(x[ids], 'f32')))
    # broadcast ids (stride 0) and transposed-narrowed ids
    ids_b = np.array([2], dtype=np.int64)
    o.case('isel.ids_bcast', 'index_select', 'f32', 'b', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, ids_b, 'b5', 'i64')],
           o.save(expected_arr(x[[2] * 5], 'f32')))
    ids_big = np.array([9, 1, 2, 0, 9], dtype=np.int32)
    o.case('isel.ids_narrow', 'index_select', 'f32', 'n', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, ids_big, 'n0:1:3', 'i32')],
           o.save(expected_arr(x[[1, 2, 0]], 'f32')))
    # broadcast source
    row = values((1, 6), 'f64')
    o.case('isel.src_bcast', 'index_select', 'f64', 'b', {'dim': 0},
           [spec(o, store_value(row, 'f64'), 'b4x6'), spec(o, np.array([3, 1], np.int64), 'c', 'i64')],
           o.save(expected_arr(np.broadcast_to(row, (4, 6))[[3, 1]], 'f64')))
    o.case('isel.empty_ids', 'index_select', 'f32', 'empty', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.zeros(0, np.int64), 'c', 'i64')],
           o.save(expected_arr(x[:, []], 'f32')))
    o.case('isel.one', 'index_select', 'i64', 'one', {'dim': 0},
           [spec(o, np.array([7], np.int64)), spec(o, np.array([0, 0], np.uint8), 'c', 'u8')],
           o.save(np.array([7, 7], np.int64)))
    o.case('isel.oob', 'index_select', 'f32', 'c', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([0, 3], np.int64), 'c', 'i64')], '!INDEX')
    o.case('isel.neg', 'index_select', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([-1], np.int32), 'c', 'i32')], '!INDEX')
    o.case('isel.f32ids', 'index_select', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([0], np.float32), 'c', 'f32')], '!DTYPE')
    o.case('isel.i16ids', 'index_select', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([0], np.int16), 'c', 'i16')], '!DTYPE')
    o.case('isel.2d_ids', 'index_select', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.zeros((2, 2), np.int64), 'c', 'i64')], '!SHAPE')

    # ------------------------------------------------------------- embedding
    for dt in ('f32', 'bf16', 'i32'):
        tab = values((10, 6), dt)
        for ishape in ((3,), (2, 4), ()):
            ids = rng.integers(0, 10, ishape)
            o.case('emb.%s.%s' % (dt, shp(ishape)), 'embedding', dt, 'c', None,
                   [spec(o, idx_store(ids, 'u32'), 'c', 'u32'), spec(o, store_value(tab, dt))],
                   o.save(expected_arr(tab[ids], dt)))
    o.case('emb.oob', 'embedding', 'f32', 'c', None,
           [spec(o, np.array([10], np.int64), 'c', 'i64'), spec(o, store_value(values((10, 6), 'f32'), 'f32'))],
           '!INDEX')

    # --------------------------------------------------------------- gather
    for dt in VALUE_DTYPES:
        for v in variants:
            for dim in (0, 1, -1):
                x = values((4, 5, 3) if v != 'tn' else (4, 5), dt)
                d = dim % x.ndim
                ishape = list(x.shape)
                ishape[d] = 6
                if x.ndim == 3:
                    ishape[2] = 2   # smaller than t off dim
                ids = rng.integers(0, x.shape[d], ishape)
                want = torch.gather(torch.tensor(x), d, torch.tensor(ids)).numpy()
                idt = IDX[len(o.lines) % 4]
                iv = 't' if v in ('t', 'tn') else 'c'
                o.case('gather.%s.%s.d%d' % (dt, v, dim), 'gather', dt, v, {'dim': dim},
                       [layout(o, x, v, dt), layout(o, idx_store(ids, idt), iv, idt, idt)],
                       o.save(expected_arr(want, dt)))
    x = values((3, 4), 'f32')
    o.case('gather.oob', 'gather', 'f32', 'c', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([[0], [4], [1]], np.int64), 'c', 'i64')], '!INDEX')
    o.case('gather.rank', 'gather', 'f32', 'c', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([0], np.int64), 'c', 'i64')], '!SHAPE')
    o.case('gather.too_big', 'gather', 'f32', 'c', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.zeros((4, 1), np.int64), 'c', 'i64')], '!SHAPE')
    o.case('gather.empty', 'gather', 'f32', 'empty', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.zeros((0, 4), np.int64), 'c', 'i64')],
           o.save(np.zeros((0, 4))))
    ib = np.array([[3, 0]], np.int64)
    o.case('gather.ids_bcast', 'gather', 'f32', 'b', {'dim': 1},
           [spec(o, store_value(x, 'f32')), spec(o, ib, 'b3x2', 'i64')],
           o.save(expected_arr(np.take_along_axis(x, np.broadcast_to(ib, (3, 2)), 1), 'f32')))

    # ------------------------------------------------- scatter / scatter_add
    for op in ('scatter', 'scatter_add', 'scatter_', 'scatter_add_'):
        add = 'add' in op
        for dt in VALUE_DTYPES:
            for v in (['c', 't', 'n'] if op.endswith('_') else variants):
                for dim in (0, 1):
                    x = values((4, 5), dt)
                    ishape = [3, 3] if dim == 1 else [6, 4]
                    ids = rng.integers(0, x.shape[dim], ishape)
                    src = values((ishape[0] + 1, ishape[1] + 1), dt)   # larger than ids
                    srcn = src[:ishape[0], :ishape[1]]
                    tx, ti, ts = torch.tensor(x), torch.tensor(ids), torch.tensor(srcn)
                    if add and dt in TORCH_FLOAT:
                        want = tadd_float(x, dt, lambda t: t.scatter_add(dim, ti, ts.to(t.dtype)))
                    elif add:
                        want = tx.scatter_add(dim, ti, ts).numpy()
                    else:
                        # deterministic last-write-wins reference (torch leaves duplicates unspecified)
                        want = x.copy()
                        for p in np.ndindex(*ishape):
                            q = list(p)
                            q[dim] = ids[p]
                            want[tuple(q)] = srcn[p]
                    idt = IDX[len(o.lines) % 4]
                    o.case('%s.%s.%s.d%d' % (op, dt, v, dim), op, dt, v, {'dim': dim},
                           [layout(o, x, v, dt), spec(o, idx_store(ids, idt), 'c', idt),
                            layout(o, src, 't' if v == 't' else 'c', dt)],
                           o.save(expected_arr(want, dt)))
        x = values((3, 4), 'f32')
        o.case('%s.oob' % op, op, 'f32', 'c', {'dim': 0},
               [spec(o, store_value(x, 'f32')), spec(o, np.array([[0, 3]], np.int64), 'c', 'i64'),
                spec(o, store_value(values((1, 2), 'f32'), 'f32'))], '!INDEX')
        o.case('%s.shape' % op, op, 'f32', 'c', {'dim': 0},
               [spec(o, store_value(x, 'f32')), spec(o, np.array([[0, 1, 2]], np.int64), 'c', 'i64'),
                spec(o, store_value(values((1, 2), 'f32'), 'f32'))], '!SHAPE')
        o.case('%s.dtype' % op, op, 'f32', 'c', {'dim': 0},
               [spec(o, store_value(x, 'f32')), spec(o, np.array([[0, 1]], np.float64), 'c', 'f64'),
                spec(o, store_value(values((1, 2), 'f32'), 'f32'))], '!DTYPE')

    # --------------------------------------------------------------- index_add
    for dt in VALUE_DTYPES:
        for v in variants:
            for dim in (0, 1, -1):
                x = values((4, 5, 3) if v != 'tn' else (4, 5), dt)
                d = dim % x.ndim
                ids = rng.integers(0, x.shape[d], 7)
                sshape = list(x.shape)
                sshape[d] = 7
                src = values(sshape, dt)
                ti = torch.tensor(ids)
                if dt in TORCH_FLOAT:
                    want = tadd_float(x, dt, lambda t: t.index_add(d, ti, torch.tensor(src).to(t.dtype)))
                else:
                    want = torch.tensor(x).index_add(d, ti, torch.tensor(src)).numpy()
                idt = IDX[len(o.lines) % 4]
                o.case('iadd.%s.%s.d%d' % (dt, v, dim), 'index_add', dt, v, {'dim': dim},
                       [layout(o, x, v, dt), spec(o, idx_store(ids, idt), 'c', idt),
                        layout(o, src, 't' if v in ('t', 'tn') else 'c', dt)],
                       o.save(expected_arr(want, dt)))
    x = values((3, 4), 'f32')
    o.case('iadd.oob', 'index_add', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([3], np.int64), 'c', 'i64'),
            spec(o, store_value(values((1, 4), 'f32'), 'f32'))], '!INDEX')
    o.case('iadd.shape', 'index_add', 'f32', 'c', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.array([0, 1], np.int64), 'c', 'i64'),
            spec(o, store_value(values((1, 4), 'f32'), 'f32'))], '!SHAPE')
    o.case('iadd.empty', 'index_add', 'f32', 'empty', {'dim': 0},
           [spec(o, store_value(x, 'f32')), spec(o, np.zeros(0, np.int64), 'c', 'i64'),
            spec(o, np.zeros((0, 4), np.float32))], o.save(expected_arr(x, 'f32')))

    # ------------------------------------------------------- composite ops
    for dt in ('f32', 'f16', 'bf16', 'i64', 'u8', 'u32'):
        for v in ('c', 't', 'n'):
            x = values((4, 3, 5), dt)
            tx = torch.tensor(x)
            for dims in ((0,), (2,), (0, -1), (1, 0, 2)):
                want = torch.flip(tx, dims).numpy()
                o.case('flip.%s.%s.%s' % (dt, v, '_'.join(map(str, dims))), 'flip', dt, v,
                       {'dims': '|'.join(map(str, dims))}, [layout(o, x, v, dt)], o.save(expected_arr(want, dt)))
            for shift, dim in ((1, 0), (-2, 2), (7, 1), (0, 0), (-13, -1)):
                want = torch.roll(tx, shift, dim).numpy()
                o.case('roll.%s.%s.%d_%d' % (dt, v, shift, dim), 'roll', dt, v, {'shift': shift, 'dim': dim},
                       [layout(o, x, v, dt)], o.save(expected_arr(want, dt)))
            for reps in ((1, 1, 1), (2, 1, 3), (2, 1, 1, 2), (1, 0, 1)):
                want = tx.repeat(*reps).numpy()
                o.case('repeat.%s.%s.%s' % (dt, v, '_'.join(map(str, reps))), 'repeat', dt, v,
                       {'reps': '|'.join(map(str, reps))}, [layout(o, x, v, dt)], o.save(expected_arr(want, dt)))
            for dim, l, r in ((0, 1, 2), (2, 0, 3), (-2, 2, 0), (1, 0, 0)):
                d = dim % 3
                pad = [0, 0] * (2 - d) + [l, r]
                # F.pad lists pads from the last dim backwards
                pz = [0, 0] * (3 - d - 1) + [l, r]
                want = torch.nn.functional.pad(tx if dt in INTS else tx.to(torch.float64), pz, mode='constant', value=0).numpy()
                o.case('padz.%s.%s.%d_%d_%d' % (dt, v, dim, l, r), 'pad_zeros', dt, v,
                       {'dim': dim, 'left': l, 'right': r}, [layout(o, x, v, dt)], o.save(expected_arr(want, dt)))
                # replicate: numpy edge pad (same as F.pad replicate)
                npad = [(0, 0)] * 3
                npad[d] = (l, r)
                want = np.pad(x, npad, mode='edge')
                o.case('pads.%s.%s.%d_%d_%d' % (dt, v, dim, l, r), 'pad_same', dt, v,
                       {'dim': dim, 'left': l, 'right': r}, [layout(o, x, v, dt)], o.save(expected_arr(want, dt)))
                del pad
            for mshape, mdt in (((4, 3, 5), 'u8'), ((3, 1), 'i64'), ((5,), 'u32'), ((), 'i32')):
                m = rng.integers(0, 2, mshape)
                if mdt == 'i64':
                    m = m * rng.integers(-3, 4, mshape)
                val = 2.5 if dt not in INTS else 7
                tm = torch.from_numpy(np.array(np.asarray(m) != 0, dtype=bool).reshape(np.shape(m)))
                want = (tx if dt in INTS else tx.to(torch.float64)).masked_fill(tm, val).numpy()
                o.case('mfill.%s.%s.%s' % (dt, v, shp(mshape)), 'masked_fill', dt, v, {'value': val},
                       [layout(o, x, v, dt), spec(o, idx_store(m, mdt), 'c', mdt)], o.save(expected_arr(want, dt)))
            for dim, start, ln in ((0, 1, 2), (2, 0, 5), (1, 2, 1), (1, 0, 0)):
                sshape = list(x.shape)
                sshape[dim] = ln
                src = values(sshape, dt)
                want = x.copy()
                sl = [slice(None)] * 3
                sl[dim] = slice(start, start + ln)
                want[tuple(sl)] = src
                o.case('sscat.%s.%s.%d_%d_%d' % (dt, v, dim, start, ln), 'slice_scatter', dt, v,
                       {'dim': dim, 'start': start}, [layout(o, x, v, dt), layout(o, src, v, dt)],
                       o.save(expected_arr(want, dt)))
    x = values((4, 3), 'f32')
    o.case('flip.dup', 'flip', 'f32', 'c', {'dims': '0|-2'}, [spec(o, store_value(x, 'f32'))], '!ARG')
    o.case('flip.baddim', 'flip', 'f32', 'c', {'dims': '2'}, [spec(o, store_value(x, 'f32'))], '!INDEX')
    o.case('flip.empty', 'flip', 'f32', 'empty', {'dims': '0'}, [spec(o, np.zeros((0, 3), np.float32))],
           o.save(np.zeros((0, 3))))
    o.case('roll.empty', 'roll', 'f32', 'empty', {'shift': 3, 'dim': 0}, [spec(o, np.zeros((0, 3), np.float32))],
           o.save(np.zeros((0, 3))))
    o.case('repeat.rank0', 'repeat', 'f32', 'rank0', {'reps': '3|2'}, [spec(o, np.array(1.5, np.float32))],
           o.save(np.full((3, 2), 1.5)))
    o.case('repeat.few', 'repeat', 'f32', 'c', {'reps': '2'}, [spec(o, store_value(x, 'f32'))], '!ARG')
    o.case('pads.empty', 'pad_same', 'f32', 'empty', {'dim': 0, 'left': 1, 'right': 0},
           [spec(o, np.zeros((0, 3), np.float32))], '!SHAPE')
    o.case('padz.neg', 'pad_zeros', 'f32', 'c', {'dim': 0, 'left': -1, 'right': 0},
           [spec(o, store_value(x, 'f32'))], '!ARG')
    o.case('mfill.fmask', 'masked_fill', 'f32', 'c', {'value': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.ones(3, np.float32), 'c', 'f32')], '!DTYPE')
    o.case('mfill.bigmask', 'masked_fill', 'f32', 'c', {'value': 1},
           [spec(o, store_value(x, 'f32')), spec(o, np.ones((2, 4, 3), np.uint8), 'c', 'u8')], '!SHAPE')
    o.case('sscat.oob', 'slice_scatter', 'f32', 'c', {'dim': 0, 'start': 3},
           [spec(o, store_value(x, 'f32')), spec(o, store_value(values((2, 3), 'f32'), 'f32'))], '!INDEX')
    o.finish()
    print('gen_indexing: %d cases in %s' % (o.ncase, o.dir))


if __name__ == '__main__':
    main()
