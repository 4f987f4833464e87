#!/usr/bin/env python3
"""The floors, checked on the compiled objects (ctest `floorcheck`).

    python3 tools/floorcheck.py FOLDER=obj1.o,obj2.o,... ...

Each argument names one folder of src/ and its object files (CMake passes
them, see tests/CMakeLists.txt); the folder's floor is the one
tools/depgraph.py's FLOORS gives it, the one table of the floors. Folders
of one floor (ops, cpu, cuda) may not use each other. For every object, each symbol it leaves
undefined (nm -u) that some floor defines must be defined by a LOWER floor
or by the object's own floor. Symbols no floor defines (libc, libm, zlib,
CUDA's libraries) are not ours and pass.

depgraph.py reads the source text; this reads what the compiler made, so a
call hidden behind a macro, an inline function or a generated table is
still seen. The one name the tensor floor takes from above is
ALLOWED_UP: the table of built-in backends that CMake generates for the
assembled library (registry.c reads it; a backend is plugged in, not
called by name).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from depgraph import FLOOR_OF  # noqa: E402

ALLOWED_UP = {'wk__builtin_backends'}


def symbols(obj):
    """(defined globals, undefined) of one object file."""
    out = subprocess.run(['nm', '-P', obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == 'U' or kind == 'w' or kind == 'v':
            if kind == 'U':
                undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def main(argv):
    floors = []   # (rank, name, [objs])
    for arg in argv:
        name, _, objs = arg.partition('=')
        if not objs or not name:
            print('floorcheck: argument %r is not FOLDER=objs' % arg[:80], file=sys.stderr)
            return 2
        if name not in FLOOR_OF:
            print('floorcheck: folder %s has no floor (tools/depgraph.py FLOORS)' % name)
            return 1
        rank = FLOOR_OF[name]
        objs = [o for o in objs.split(',') if o]
        for o in objs:
            if not os.path.exists(o):
                print('floorcheck: %s: no such object (build first)' % o, file=sys.stderr)
                return 2
        floors.append((rank, name, objs))
    owner = {}      # symbol -> (rank, floor name)
    undef = []      # (rank, floor name, obj, symbols)
    for rank, name, objs in floors:
        for o in objs:
            d, u = symbols(o)
            for s in d:
                owner.setdefault(s, (rank, name))
            undef.append((rank, name, o, u))
    bad = []
    for rank, name, o, u in undef:
        for s in sorted(u):
            if s not in owner or s in ALLOWED_UP:
                continue
            r2, n2 = owner[s]
            if r2 > rank or (r2 == rank and n2 != name):
                bad.append('%s (%s) uses %s from %s' % (os.path.basename(o), name, s, n2))
    nobj = sum(len(objs) for _, _, objs in floors)
    if bad:
        print('floorcheck: %d use(s) against the floors:' % len(bad))
        for b in bad:
            print('  ' + b)
        return 1
    print('floorcheck: %d objects in %d floors, every symbol they take is from their floor or below'
          % (nobj, len(floors)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
