#!/usr/bin/env python3
"""Shows that a new list of checks holds every check of an old one (a
one-off tool for folding tests into the op table; see README.md).

    compare_checks.py manifest OLD_MANIFEST NEW_MANIFEST
        every case (op, dtype, variant, params, input views and shapes
        (file names dropped), expected status) of the old gen_oracle
        manifest is in the new one; also prints the counts
    compare_checks.py cuda_ops OLD_CHECKS NEW_LIST
        OLD_CHECKS: 'CHECK what dtype SHAPE scale=S' lines of the former
        test_cuda_ops per-op checks; NEW_LIST: test_backend_ops'
        WICK_BACKEND_OPS_LIST lines. Every (op, dtype, result shape) is
        checked at least as often in layouts c / t as before.
"""
import collections
import os
import sys

import numpy as np


def manifest_cases(path):
    d = os.path.dirname(path)
    out = collections.Counter()
    for line in open(path):
        if line.startswith('#'):
            continue
        f = line.split()
        specs = []
        for sp in ([] if f[6] == '-' else f[6].split(',')):
            name, _, rest = sp.partition('@')
            shape = np.load(os.path.join(d, name.split('#')[0]), mmap_mode='r').shape
            specs.append('%s@%s' % ('x'.join(map(str, shape)), rest or 'c'))
        exp = f[7] if f[7].startswith('!') else 'values'
        out[(f[1], f[2], f[3], f[4], f[5], ','.join(specs), exp)] += 1
    return out


NAMES = {'sort values': 'sort', 'sort indices': 'sort', 'topk values': 'topk', 'topk indices': 'topk',
         'max_pool2d 2x2': 'max_pool2d', 'matmul f8e4m3': 'matmul', 'index_add (long ids)': 'index_add',
         'scatter_add (long line)': 'scatter_add', 'scatter (long line)': 'scatter'}


def main():
    mode, old, new = sys.argv[1:4]
    if mode == 'manifest':
        a, b = manifest_cases(old), manifest_cases(new)
        lost = a - b
        print('old: %d cases; new: %d cases; old cases missing from new: %d' % (
            sum(a.values()), sum(b.values()), sum(lost.values())))
        for k in list(lost)[:20]:
            print('  missing', k)
        return 1 if lost else 0
    old_c = collections.Counter()
    for line in open(old):
        if not line.startswith('CHECK '):
            continue
        body = line[6:].rsplit(' scale=', 1)[0]
        for what in sorted(NAMES, key=len, reverse=True) + ['']:
            if what and body.startswith(what + ' '):
                break
        if not what:
            what = body.split()[0]
        rest = body[len(what):].split()
        op = NAMES.get(what, what)
        dt = rest[0] if not what.endswith('indices') else 'values-dtype'
        shape = rest[1] if len(rest) > 1 else '_'
        if what.endswith('indices'):
            continue   # the same check compares the second result (indices) too
        old_c[(op, dt, shape)] += 1
    new_c = collections.Counter()
    for line in open(new):
        head, _, res = line.rstrip('\n').partition(' -> ')
        op, dt, lay = head.split()[:3]
        if lay in ('c', 't'):
            new_c[(op, dt, res or '_')] += 1
    lost = {k: (v, new_c[k]) for k, v in old_c.items() if new_c[k] < v}
    print('old per-op checks: %d (sort / topk index checks counted with their values); new in layouts c/t for '
          'the same (op, dtype, result shape): %d; short: %d' % (
              sum(old_c.values()), sum(min(new_c[k], v) for k, v in old_c.items()), len(lost)))
    for k, v in list(lost.items())[:20]:
        print('  short', k, 'old %d new %d' % v)
    return 1 if lost else 0


if __name__ == '__main__':
    sys.exit(main())
