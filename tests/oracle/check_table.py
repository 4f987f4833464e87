#!/usr/bin/env python3
"""The op table as the C side compiled it (`test_oracle --list`, JSON) must
equal the Python side's reading of op_table.def (op_table.py): one table,
two readers, checked so neither drifts.

    /usr/bin/python3 tests/oracle/check_table.py BUILD/tests/test_oracle
"""
import json
import os
import subprocess
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import op_table  # noqa: E402


def main():
    c_side = json.loads(subprocess.run([sys.argv[1], '--list'], check=True, capture_output=True, text=True).stdout)
    py_side = [{k: e[k] for k in op_table.FIELDS} for e in op_table.load()]
    bad = 0
    if len(c_side) != len(py_side):
        print('check_table: C has %d ops, Python %d' % (len(c_side), len(py_side)))
        bad += 1
    for c, p in zip(c_side, py_side):
        if c != p:
            print('check_table: differs:\n  C      %s\n  Python %s' % (c, p))
            bad += 1
    grad = [e['name'] for e in py_side if e['grad']]
    print('check_table: %d ops, the same on both sides: %s; %d grad-checkable' % (
        len(py_side), 'yes' if not bad else 'NO', len(grad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
