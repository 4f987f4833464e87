#!/usr/bin/env python3
"""Folder-level include and call graph of wick's sources.

    python3 tools/depgraph.py [SRC_ROOT]     (default: ./src)
    python3 tools/depgraph.py --files DIR    (file-level graph of one folder)

Nodes are the folders under src/ (core, cpu, cuda, io) plus 'top' for the
headers directly in src/ (backend.h, ops.h). An include edge A -> B: a file
in A includes a header of B. A call edge A -> B: a file in A names a
function (or table / descriptor object) that only B defines. Definitions
are found by a lexical scan (a name followed by '(' at the start of a
definition line, or a 'const T name =' object); good enough for C written
in this project's style, not a C parser. Prints both edge lists, the edges
from core into a backend folder ("upward"), and every cycle.

--files DIR: the same graph with the files of DIR as nodes (python/src,
say). An include edge a.c -> b.h: a.c includes b.h of DIR (headers outside
DIR -- wick/..., core/... -- are listed per file instead); a call edge a.c
-> b.c: a.c names a function or object (any name) that only b.c of DIR
defines without `static` (file-scope objects with or without an
initializer, function pointers too). Only .c files make call edges: a
header's prototypes are declarations, not uses. Names pasted by the
preprocessor (an X-macro list) are not seen. Prints the edges and every
cycle ("cycles: none" when the folder is layered).
"""
import os
import re
import sys
from collections import defaultdict

BACKENDS = {'cpu', 'cuda'}
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEF_FN = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \*]*?\b(wk_\w+)\s*\([^;]*?\)\s*\{', re.M | re.S)
DEF_OBJ = re.compile(r'^(?:const\s+)?(?:struct\s+)?\w+\s+(?:\*\s*const\s+)?(wk_\w+)(?:\[\])?\s*=', re.M)
IDENT = re.compile(r'\bwk_\w+\b')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def folder_of(rel):
    parts = rel.split('/')
    return parts[0] if len(parts) > 1 else 'top'


def scan(root):
    files = {}
    for d, _, names in os.walk(root):
        for n in names:
            if n.endswith(('.c', '.h', '.cu', '.cuh', '.inc')):
                p = os.path.join(d, n)
                rel = os.path.relpath(p, root).replace(os.sep, '/')
                with open(p, encoding='utf-8', errors='replace') as f:
                    files[rel] = f.read()
    return files


def graph(root):
    files = scan(root)
    inc = defaultdict(set)
    defs = defaultdict(set)    # name -> folders defining it (non-static)
    for rel, text in files.items():
        for h in INC.findall(text):
            target = h if '/' in h else os.path.join(os.path.dirname(rel), h).replace(os.sep, '/')
            if target.startswith('wick/'):
                continue  # the public headers (include/wick) are not a folder of src
            tf = folder_of(target)
            if tf != folder_of(rel):
                inc[folder_of(rel)].add(tf)
        body = COMMENT.sub(' ', text)
        for m in DEF_FN.finditer(body):
            if not m.group(0).startswith('static'):
                defs[m.group(1)].add(folder_of(rel))
        for m in DEF_OBJ.finditer(body):
            if not m.group(0).startswith('static'):
                defs[m.group(1)].add(folder_of(rel))
    calls = defaultdict(set)
    why = defaultdict(set)
    for rel, text in files.items():
        if not rel.endswith(('.c', '.cu')):
            continue
        src = folder_of(rel)
        body = STRING.sub('""', COMMENT.sub(' ', text))
        for name in set(IDENT.findall(body)):
            owners = defs.get(name, set())
            if owners and src not in owners:
                for o in owners:
                    calls[src].add(o)
                    why[(src, o)].add(name)
    return inc, calls, why


# ---- --files: a folder's files as the nodes ----
DEF_ANY_FN = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \*]*?\b(\w+)\s*\([^;]*?\)\s*\{', re.M | re.S)
DEF_ANY_OBJ = re.compile(r'^(?!static\b|extern\b|typedef\b|return\b)(?:const\s+)?(?:struct\s+)?\w+[\s\*]+(?:const\s+)?'
                         r'(\w+)\s*(?:\[[^\]]*\])?\s*[=;]', re.M)
DEF_ANY_FNPTR = re.compile(r'^(?!static\b|extern\b|typedef\b)\w[\w \*]*\(\s*\*\s*(\w+)\s*\)\s*\([^)]*\)\s*[=;]', re.M)
ANY_IDENT = re.compile(r'\b[A-Za-z_]\w*\b')


def file_graph(root):
    files = scan(root)
    inc = defaultdict(set)
    outside = defaultdict(set)  # file -> headers it includes from outside root
    defs = defaultdict(set)     # name -> files defining it (non-static)
    for rel, text in files.items():
        for h in INC.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(rel), h)).replace(os.sep, '/')
            if target in files:
                inc[rel].add(target)
            else:
                outside[rel].add(h)
        if not rel.endswith(('.c', '.cu')):
            continue
        body = COMMENT.sub(' ', text)
        for m in DEF_ANY_FN.finditer(body):
            if not m.group(0).startswith('static'):
                defs[m.group(1)].add(rel)
        for rx in (DEF_ANY_OBJ, DEF_ANY_FNPTR):
            for m in rx.finditer(body):
                defs[m.group(1)].add(rel)
    calls = defaultdict(set)
    why = defaultdict(set)
    for rel, text in files.items():
        if not rel.endswith(('.c', '.cu')):
            continue
        body = STRING.sub('""', COMMENT.sub(' ', text))
        for name in set(ANY_IDENT.findall(body)):
            owners = defs.get(name, set())
            if owners and rel not in owners:
                for o in owners:
                    calls[rel].add(o)
                    why[(rel, o)].add(name)
    return files, inc, calls, why, outside


def files_main(root):
    files, inc, calls, why, outside = file_graph(root)
    both = defaultdict(set)
    for e in (inc, calls):
        for a, bs in e.items():
            both[a] |= bs
    w = max([len(f) for f in files] + [5])
    print('files of %s: %d' % (root, len(files)))
    print('include edges:')
    for a in sorted(inc):
        print('  %-*s -> %s' % (w, a, ', '.join(sorted(inc[a]))))
    print('includes from outside %s (other than the system\'s):' % root)
    for a in sorted(outside):
        print('  %-*s -> %s' % (w, a, ', '.join(sorted(outside[a]))))
    print('call edges (names that make them, at most 6):')
    for a in sorted(calls):
        for b in sorted(calls[a]):
            names = sorted(why[(a, b)])
            print('  %-*s -> %-*s %s%s' % (w, a, w, b, ', '.join(names[:6]), ' ...' if len(names) > 6 else ''))
    cyc = cycles(both)
    print('cycles: %s' % ('; '.join(' -> '.join(c + (c[0],)) for c in cyc) if cyc else 'none'))
    return 0


def cycles(edges):
    nodes = set(edges) | {b for v in edges.values() for b in v}
    found = set()

    def walk(start, node, path):
        for n in sorted(edges.get(node, ())):
            if n == start:
                cyc = path[:]
                i = cyc.index(min(cyc))
                found.add(tuple(cyc[i:] + cyc[:i]))
            elif n not in path:
                walk(start, n, path + [n])
    for s in sorted(nodes):
        walk(s, s, [s])
    return sorted(found)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--files':
        return files_main(sys.argv[2] if len(sys.argv) > 2 else 'python/src')
    root = sys.argv[1] if len(sys.argv) > 1 else 'src'
    inc, calls, why = graph(root)
    both = defaultdict(set)
    for e in (inc, calls):
        for a, bs in e.items():
            both[a] |= bs
    print('include edges:')
    for a in sorted(inc):
        print('  %-5s -> %s' % (a, ', '.join(sorted(inc[a]))))
    print('call edges (names that make them, at most 6):')
    for a in sorted(calls):
        for b in sorted(calls[a]):
            names = sorted(why[(a, b)])
            print('  %-5s -> %-5s %s%s' % (a, b, ', '.join(names[:6]), ' ...' if len(names) > 6 else ''))
    up = sorted('%s -> %s' % (a, b) for a in ('core', 'top') for b in both.get(a, ()) if b in BACKENDS)
    print('upward edges (core/top into a backend): %s' % (', '.join(up) if up else 'none'))
    cyc = cycles(both)
    print('cycles: %s' % ('; '.join(' -> '.join(c + (c[0],)) for c in cyc) if cyc else 'none'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
