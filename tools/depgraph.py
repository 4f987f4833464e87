#!/usr/bin/env python3
"""Folder-level include and call graph of wick's sources, checked against
the floors.

    python3 tools/depgraph.py [--check] [SRC_ROOT [INCLUDE_ROOT]]
        (defaults: ./src and ./include/wick)
    python3 tools/depgraph.py --files DIR    (file-level graph of one folder)

Nodes are the folders under src/. An include edge A -> B: a file in A
includes a header of B. A call edge A -> B: a file in A names a function
(or table / descriptor object) that only B defines. Definitions are found
by a lexical scan (a name followed by '(' at the start of a definition
line, or a 'const T name =' object); good enough for C written in this
project's style, not a C parser.

Every folder belongs to a floor (FLOORS below, lowest first). A folder may
depend on folders of LOWER floors only; two folders on one floor (the two
backends, or the backends and the primitive ops) see nothing of each
other. The public headers (include/wick/*.h) have floors too
(PUBLIC_FLOORS), and a header includes only headers of its floor or below.

Prints both edge lists, every edge that breaks the floors ("upward"),
every cycle, and the public header check. --check exits 1 when any
folder edge points up or sideways, any cycle exists, any folder or public
header has no floor, or a public header includes one above it: ctest runs
it (test `depgraph`), so the build keeps the floors.

The one recursion the floors allow is inside src/autograd: a backward rule
(rules_*.c) calls the public tracked ops (tracked_*.c) so that a backward
pass can itself be recorded (second-order gradients), and those ops call
the recorders that name the rules. Both halves live in the autograd floor,
so it is not an edge between folders.

--files DIR: the same graph with the files of DIR as nodes (python/src,
say). An include edge a.c -> b.h: a.c includes b.h of DIR (headers outside
DIR -- wick/..., tensor/... -- are listed per file instead); a call edge a.c
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

# Lowest first. Folders on one floor must not depend on each other.
FLOORS = [
    ('base', {'base'}),          # errors, env, dtype descriptors and conversions, checked arithmetic
    ('formats', {'quant'}),      # GGML block formats and their portable reference rows
    ('tensor', {'tensor'}),      # storage, layouts, views, scopes, registry, dispatch, the backend contract
    ('beside', {'ops', 'cpu', 'cuda'}),  # untracked primitive ops; the backends beside them
    ('autograd', {'autograd'}),  # nodes, rules, and the public tracked ops
    ('nn', {'nn'}),              # fused-op composites and the layer kit
    ('files', {'io'}),           # safetensors, GGUF, npy, JSON
    ('text', {'text'}),          # tokenizers
    ('dist', {'dist'}),          # communicators and collectives (MPI, NCCL), their tracked forms
    ('top', {'train', 'model'}), # training; model architectures and generation
    ('serve', {'serve'}),        # the serving engine (scheduler, paged batches) and its HTTP front
]
FLOOR_OF = {f: i for i, (_, folders) in enumerate(FLOORS) for f in folders}

# Public headers (include/wick/NAME) and their floors (same numbering).
# wick.h is the tensor core's API: its tracked ops live in the autograd
# floor, so it and the headers it includes (autograd.h, nn.h's fused ops,
# custom_op.h) sit there. Files, text, training and models stand alone,
# above it; all.h is the umbrella that includes everything.
PUBLIC_FLOORS = {
    'wick_ops.h': 'autograd', 'wick.h': 'autograd', 'custom_op.h': 'autograd',
    'autograd.h': 'autograd', 'nn.h': 'autograd',
    'layers.h': 'nn',
    'gguf.h': 'files', 'safetensors.h': 'files', 'imatrix.h': 'files',
    'tokenizer.h': 'text', 'chat.h': 'text', 'grammar.h': 'text',
    'dist.h': 'dist',
    'train.h': 'top', 'lm.h': 'top', 'generate.h': 'top', 'bert.h': 'top',
    'serve.h': 'serve',
    'all.h': 'serve',
}
# Any source file may read the core's declarations (types, enums, the op
# API): what it may CALL is checked by the call edges above. The headers of
# the files, text and top floors only by their floor and the ones above.
SRC_READS_ANYWHERE = {'wick_ops.h', 'wick.h', 'custom_op.h', 'autograd.h', 'nn.h'}
FLOOR_RANK = {name: i for i, (name, _) in enumerate(FLOORS)}

INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
INC_ANY = re.compile(r'^\s*#\s*include\s+[<"]([^>"]+)[>"]', re.M)
DEF_FN = re.compile(r'^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w \*]*?\b(wk_\w+)\s*\([^;]*?\)\s*\{', re.M | re.S)
DEF_OBJ = re.compile(r'^(?:const\s+)?(?:struct\s+)?\w+\s+(?:\*\s*const\s+)?(wk_\w+)(?:\[\])?\s*=', re.M)
IDENT = re.compile(r'\bwk_\w+\b')
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def folder_of(rel):
    parts = rel.split('/')
    return parts[0] if len(parts) > 1 else 'top-level'


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
                continue  # the public headers (include/wick) are checked on their own
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
    return files, inc, calls, why


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


def public_check(inc_root):
    """Problems among the public headers: a header with no floor, or one
    that includes a header of a higher floor."""
    bad = []
    if not os.path.isdir(inc_root):
        return bad
    for n in sorted(os.listdir(inc_root)):
        if not n.endswith('.h'):
            continue
        if n not in PUBLIC_FLOORS:
            bad.append('include/wick/%s has no floor (tools/depgraph.py PUBLIC_FLOORS)' % n)
            continue
        with open(os.path.join(inc_root, n), encoding='utf-8') as f:
            text = COMMENT.sub(' ', f.read())
        for h in INC_ANY.findall(text):
            base = h.split('/')[-1]
            if not (h.startswith('wick/') or (base == h and base in PUBLIC_FLOORS)):
                continue
            if base not in PUBLIC_FLOORS:
                continue  # reported on its own line
            me, it = FLOOR_RANK[PUBLIC_FLOORS[n]], FLOOR_RANK[PUBLIC_FLOORS[base]]
            if it > me:
                bad.append('include/wick/%s (floor %s) includes wick/%s (floor %s, above it)'
                           % (n, PUBLIC_FLOORS[n], base, PUBLIC_FLOORS[base]))
    return bad


def main(argv):
    if argv and argv[0] == '--files':
        return files_main(argv[1] if len(argv) > 1 else 'python/src')
    check = '--check' in argv
    args = [a for a in argv if a != '--check']
    root = args[0] if args else 'src'
    inc_root = args[1] if len(args) > 1 else os.path.join(os.path.dirname(os.path.abspath(root)), 'include', 'wick')
    files, inc, calls, why = graph(root)
    both = defaultdict(set)
    for e in (inc, calls):
        for a, bs in e.items():
            both[a] |= bs
    print('include edges:')
    for a in sorted(inc):
        print('  %-8s -> %s' % (a, ', '.join(sorted(inc[a]))))
    print('call edges (names that make them, at most 6):')
    for a in sorted(calls):
        for b in sorted(calls[a]):
            names = sorted(why[(a, b)])
            print('  %-8s -> %-8s %s%s' % (a, b, ', '.join(names[:6]), ' ...' if len(names) > 6 else ''))
    problems = []
    folders = sorted({folder_of(r) for r in files})
    for f in folders:
        if f not in FLOOR_OF:
            problems.append('folder %s has no floor (tools/depgraph.py FLOORS)' % f)
    up = []
    for a in sorted(both):
        for b in sorted(both[a]):
            if a in FLOOR_OF and b in FLOOR_OF and FLOOR_OF[b] >= FLOOR_OF[a]:
                kind = 'sideways' if FLOOR_OF[b] == FLOOR_OF[a] else 'upward'
                names = sorted(why.get((a, b), ()))
                up.append('%s -> %s (%s%s)' % (a, b, kind, ': ' + ', '.join(names[:4]) if names else ': include'))
    print('edges against the floors: %s' % ('; '.join(up) if up else 'none'))
    problems += ['edge ' + u for u in up]
    cyc = cycles(both)
    print('cycles: %s' % ('; '.join(' -> '.join(c + (c[0],)) for c in cyc) if cyc else 'none'))
    problems += ['cycle ' + ' -> '.join(c + (c[0],)) for c in cyc]
    pub = public_check(inc_root)
    # a source file sees the public headers of its own floor and below
    for rel, text in sorted(files.items()):
        f = folder_of(rel)
        if f not in FLOOR_OF:
            continue
        for h in INC_ANY.findall(COMMENT.sub(' ', text)):
            if not h.startswith('wick/'):
                continue
            base = h.split('/')[-1]
            hf = PUBLIC_FLOORS.get(base)
            if hf is not None and base not in SRC_READS_ANYWHERE and FLOOR_RANK[hf] > FLOOR_OF[f]:
                pub.append('src/%s (floor %s) includes %s (floor %s, above it)' % (rel, FLOORS[FLOOR_OF[f]][0], h, hf))
    print('public headers: %s' % ('; '.join(pub) if pub else 'every include points down'))
    problems += pub
    if check and problems:
        print('depgraph: %d problem(s):' % len(problems), file=sys.stderr)
        for p in problems:
            print('  ' + p, file=sys.stderr)
        return 1
    if check:
        print('depgraph: the floors hold (%d folders, %d public headers)' % (len(folders), len(PUBLIC_FLOORS)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
