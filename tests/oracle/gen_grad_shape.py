#!/usr/bin/env python3
"""PyTorch's gradients of the joins, pads, indexing ops, shape composites and
in-place writes (torch 1.13 autograd), for tests/test_grad_shape.c.

    /usr/bin/python3 tests/oracle/gen_grad_shape.py OUTDIR

writes only OUTDIR/grad_shape/: manifest.txt and gNNNNN.npy files. Fully
determined by SEED.

manifest.txt: '#' lines are comments; every other line has 7 fields separated
by single spaces:

    id op dtype params inputs grad_output grads

  op       cat | stack | index_select | embedding | gather | scatter |
           scatter_add | index_add | slice_scatter | slice_assign |
           masked_fill | flip | roll | repeat | pad_zeros | pad_same |
           meshgrid (the outputs stacked on a new dim 0) | and the in-place
           writes into a copy of input 0: slice_set | copy_ | scatter_ |
           scatter_add_ | slice_assign_
  dtype    f64 | f32 | f16 | bf16: the float inputs and grad_output are
           converted to it (their values are on its grid already)
  params   k=v;k=v ('-' if none); lists joined by '|'
  inputs   ','-joined FILE[@VIEW][#DTYPE] (the view chain of
           tests/oracle_util.h; #DTYPE keeps integer ids and masks)
  grad_output FILE: dL/d(output)
  grads    ','-joined, one per input: FILE (f64) with dL/d(input) for float
           inputs, '-' for integer ones
torch runs in the case's dtype for f64 / f32 and in f64 on the rounded values
for f16 / bf16 (the exact gradient of what wick is given); wick's gradients
must match within a tolerance per dtype.
"""
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oracle_common as oc  # noqa: E402

SEED = 20261201
rng = np.random.default_rng(SEED)
DTYPES = ['f64', 'f32', 'f16', 'bf16']
TORCH = {'f64': torch.float64, 'f32': torch.float32, 'f16': torch.float64, 'bf16': torch.float64}


class Out:
    def __init__(self, root):
        self.dir = os.path.join(root, 'grad_shape')
        self.files = oc.NpyFiles(self.dir, 'g')
        self.lines = []

    def save(self, arr):
        return self.files.save(arr)


def F(shape, view='c'):
    """A float input: a base of shape (values in [-2, 2]) seen through view."""
    return ('f', tuple(shape), view)


def I(values, dtype='i64'):
    """An integer input (ids, masks) with these values."""
    return ('i', np.asarray(values), dtype)


def run(out, op, params, specs, fn):
    """One case per dtype: fn(list of torch inputs) -> torch output."""
    ptxt = ';'.join('%s=%s' % (k, '|'.join(str(x) for x in v) if isinstance(v, (list, tuple)) else v)
                    for k, v in params.items()) or '-'
    bases = [rng.uniform(-2, 2, s[1]) if s[0] == 'f' else None for s in specs]
    for dt in DTYPES:
        ins, leaves, grads_spec = [], [], []
        tins = []
        for s, base in zip(specs, bases):
            if s[0] == 'f':
                b = oc.round_float(base, dt)
                name = out.save(b)
                ins.append(name + ('' if s[2] == 'c' else '@' + s[2]))
                v = np.array(oc.view_of(b, s[2]), order='C', copy=True)  # ascontiguousarray makes rank 0 rank 1
                t = torch.tensor(v, dtype=TORCH[dt], requires_grad=True)
                leaves.append(t)
                tins.append(t)
            else:
                name = out.save(s[1].astype(oc.NP_INT[s[2]]))
                ins.append(name + '#' + s[2])
                leaves.append(None)
                tins.append(torch.tensor(s[1].astype(np.int64)))
        y = fn(tins)
        g = oc.round_float(rng.uniform(-1, 1, tuple(y.shape)), dt)
        y.backward(torch.tensor(g, dtype=TORCH[dt]))
        for t in leaves:
            if t is None:
                grads_spec.append('-')
            else:
                grads_spec.append(out.save(t.grad.detach().to(torch.float64).numpy()))
        gname = out.save(g)
        out.lines.append('c%04d %s %s %s %s %s %s' % (len(out.lines), op, dt, ptxt, ','.join(ins), gname,
                                                       ','.join(grads_spec)))


def clone_then(fn):
    """An in-place write into a copy of input 0 (wick: wk_copy, then the write)."""
    def go(x):
        y = x[0].clone()
        fn(y, x)
        return y
    return go


def cases(out):
    # cat / stack: strided, broadcast, empty and rank-0 inputs, negative dims
    run(out, 'cat', {'dim': -1}, [F((4, 3), 't'), F((3, 0)), F((1, 2), 'b3x2')], lambda x: torch.cat(x, -1))
    run(out, 'cat', {'dim': 0}, [F((2, 3)), F((4, 3), 'n0:1:2'), F((1, 3))], lambda x: torch.cat(x, 0))
    run(out, 'stack', {'dim': -1}, [F((3, 2), 't'), F((2, 3))], lambda x: torch.stack(x, -1))
    run(out, 'stack', {'dim': 0}, [F(()), F(())], lambda x: torch.stack(x, 0))
    # indexing, repeated ids (their gradients add)
    run(out, 'index_select', {'dim': -1}, [F((5, 3), 't'), I([4, 0, 4, 2, 4, 1])],
        lambda x: torch.index_select(x[0], -1, x[1]))
    run(out, 'index_select', {'dim': 0}, [F((6, 4)), I([5, 5, 0], 'u32')], lambda x: torch.index_select(x[0], 0, x[1]))
    run(out, 'embedding', {}, [F((7, 5)), I([[6, 0, 6], [2, 6, 0]], 'i32')],
        lambda x: torch.nn.functional.embedding(x[1], x[0]))
    run(out, 'gather', {'dim': 1}, [F((5, 3), 't'), I([[0, 4, 4, 1], [2, 2, 2, 0], [4, 3, 0, 0]])],
        lambda x: torch.gather(x[0], 1, x[1]))
    run(out, 'gather', {'dim': -2}, [F((4, 3)), I([[3, 0, 3], [3, 1, 0]])], lambda x: torch.gather(x[0], -2, x[1]))
    # scatter (set): positions unique along dim, so torch's result is defined.
    # src has ids' shape: torch 1.13's backward refuses a larger src (wick's
    # is checked against finite differences in test_grad_shape.c)
    perm = np.stack([rng.permutation(5)[:3] for _ in range(4)], 1)  # (3, 4), unique per column
    run(out, 'scatter', {'dim': 0}, [F((5, 4)), I(perm), F((3, 4))], lambda x: torch.scatter(x[0], 0, x[1], x[2]))
    run(out, 'scatter_add', {'dim': -1}, [F((4, 3), 't'), I(rng.integers(0, 4, (2, 5))), F((2, 5))],
        lambda x: torch.scatter_add(x[0], -1, x[1], x[2]))
    run(out, 'index_add', {'dim': 1}, [F((3, 5)), I([4, 1, 4, 4], 'i32'), F((4, 3), 't')],
        lambda x: torch.index_add(x[0], 1, x[1], x[2]))
    run(out, 'slice_scatter', {'dim': -1, 'start': 1}, [F((3, 6)), F((3, 3))],
        clone_then(lambda y, x: y.narrow(-1, 1, 3).copy_(x[1])))  # torch 1.13's slice_scatter mis-sizes this slice
    run(out, 'slice_assign', {'starts': [1, 0], 'ends': [5, 7], 'steps': [2, 3]}, [F((5, 7)), F((3,))],
        clone_then(lambda y, x: y.__setitem__((slice(1, 5, 2), slice(0, 7, 3)), x[1])))
    run(out, 'masked_fill', {'value': 0.5}, [F((4, 3), 't'), I([1, 0, 1, 1], 'u8')],
        lambda x: x[0].masked_fill(x[1].bool(), 0.5))
    run(out, 'flip', {'dims': [0, -1]}, [F((2, 3, 4))], lambda x: torch.flip(x[0], [0, -1]))
    run(out, 'roll', {'shift': -7, 'dim': 1}, [F((5, 3), 't')], lambda x: torch.roll(x[0], -7, 1))
    run(out, 'repeat', {'reps': [2, 1, 3]}, [F((3, 2), 't')], lambda x: x[0].repeat(2, 1, 3))
    run(out, 'repeat', {'reps': [3, 2]}, [F(())], lambda x: x[0].repeat(3, 2))

    def pad(x, dim, left, right, same):
        n = x.shape[dim]
        if same:
            lo = x.narrow(dim, 0, 1).expand(*[left if d == dim % x.dim() else s for d, s in enumerate(x.shape)])
            hi = x.narrow(dim, n - 1, 1).expand(*[right if d == dim % x.dim() else s for d, s in enumerate(x.shape)])
        else:
            lo = torch.zeros(*[left if d == dim % x.dim() else s for d, s in enumerate(x.shape)], dtype=x.dtype)
            hi = torch.zeros(*[right if d == dim % x.dim() else s for d, s in enumerate(x.shape)], dtype=x.dtype)
        return torch.cat([lo, x, hi], dim)
    run(out, 'pad_zeros', {'dim': 0, 'left': 2, 'right': 1}, [F((4, 3), 't')], lambda x: pad(x[0], 0, 2, 1, False))
    run(out, 'pad_same', {'dim': -1, 'left': 3, 'right': 2}, [F((2, 4))], lambda x: pad(x[0], -1, 3, 2, True))
    run(out, 'meshgrid', {'xy': 1}, [F((3,)), F((5,), 'n0:1:2'), F((4,))],
        lambda x: torch.stack(torch.meshgrid(*x, indexing='xy'), 0))
    run(out, 'meshgrid', {'xy': 0}, [F((3,)), F(())], lambda x: torch.stack(torch.meshgrid(*x, indexing='ij'), 0))
    # the in-place writes, each into a tracked copy of input 0
    run(out, 'slice_set', {'dim': 0, 'start': 1}, [F((4, 3)), F((3, 2), 't')],
        clone_then(lambda y, x: y.narrow(0, 1, 2).copy_(x[1])))
    run(out, 'copy_', {}, [F((2, 3)), F((3,), 'b2x3')], clone_then(lambda y, x: y.copy_(x[1])))
    run(out, 'scatter_', {'dim': 0}, [F((5, 4)), I(perm), F((4, 3), 't')], clone_then(lambda y, x: y.scatter_(0, x[1], x[2])))
    run(out, 'scatter_add_', {'dim': 1}, [F((3, 4)), I(rng.integers(0, 4, (3, 6))), F((3, 6))],
        clone_then(lambda y, x: y.scatter_add_(1, x[1], x[2])))
    run(out, 'slice_assign_', {'starts': [0, 1], 'ends': [4, 6], 'steps': [3, 2]}, [F((4, 6)), F((2, 1))],
        clone_then(lambda y, x: y.__setitem__((slice(0, 4, 3), slice(1, 6, 2)), x[1])))


def main():
    if len(sys.argv) != 2:
        raise SystemExit('usage: gen_grad_shape.py OUTDIR')
    out = Out(sys.argv[1])
    cases(out)
    oc.write_manifest(out.dir, [' id op dtype params inputs grad_output grads (tests/oracle/gen_grad_shape.py)'],
                      out.lines)


if __name__ == '__main__':
    main()
