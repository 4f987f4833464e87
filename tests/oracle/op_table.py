"""The op-test table (op_table.def in this folder) as Python data.

op_table.def is a C X-macro file: tests/op_table.c compiles it into the
tests; this module reads the same OP(...) lines, so gen_oracle.py takes each
op's dtypes, layouts, tolerance class, gradient flag and input domain from
the one declaration. Only the first ten fields are read (all string literals
but GRAD); the eleventh, the C call, is skipped. check_table.py compares this
reading with `test_oracle --list` (the C side's).

Not a generator (tests/CMakeLists.txt runs every gen_*.py), so not gen_*.
"""
import os
import re

FIELDS = ['id', 'name', 'kind', 'oracle', 'dtypes', 'layouts', 'tol', 'grad', 'dom', 'bk']
LAYOUTS = ['c', 't', 'n', 'b', 'tn', 'p', 'e', '1', '0']
DTYPE_GROUPS = {
    'FLOAT': ['f32', 'f64', 'f16', 'bf16', 'f8e4m3'],
    'FLOAT4': ['f32', 'f64', 'f16', 'bf16'],
    'INT': ['u8', 'u32', 'i16', 'i32', 'i64'],
    'ALL': ['u8', 'u32', 'i16', 'i32', 'i64', 'bf16', 'f16', 'f32', 'f64', 'f8e4m3'],
}
DEF_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'op_table.def')
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


def _args(text, pos):
    """The top-level comma-separated arguments of the call whose '(' is at pos."""
    args, depth, cur, i = [], 0, [], pos + 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            m = _STRING.match(text, i)
            cur.append(m.group(0))
            i = m.end()
            continue
        if ch == '(':
            depth += 1
        elif ch == ')':
            if depth == 0:
                args.append(''.join(cur).strip())
                return args
            depth -= 1
        elif ch == ',' and depth == 0:
            args.append(''.join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(ch)
        i += 1
    raise ValueError('op_table.def: unbalanced OP(')


def _value(arg):
    """A field: adjacent string literals joined, or a bare integer."""
    if arg.startswith('"'):
        return ''.join(m.group(1) for m in _STRING.finditer(arg))
    return int(arg)


def expand_dtypes(s):
    out = []
    for tok in s.split():
        for dt in DTYPE_GROUPS.get(tok, [tok]):
            if dt not in out:
                out.append(dt)
    return out


def load(path=DEF_PATH):
    """[{field: value}] in table order, with 'dtype_list' and 'layout_list'."""
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', lambda m: ' ' * len(m.group(0)), text, flags=re.S)   # comments out
    entries = []
    for m in re.finditer(r'^OP\(', text, flags=re.M):
        args = _args(text, m.end() - 1)
        if len(args) < len(FIELDS) + 1:
            raise ValueError('op_table.def: %s has %d fields' % (args[0], len(args)))
        e = {'id': args[0]}
        for k, a in zip(FIELDS[1:], args[1:len(FIELDS)]):
            e[k] = _value(a)
        e['dtype_list'] = expand_dtypes(e['dtypes'])
        e['layout_list'] = e['layouts'].split()
        bad = [x for x in e['layout_list'] if x not in LAYOUTS]
        if bad:
            raise ValueError('op_table.def: %s: unknown layouts %s' % (e['name'], bad))
        entries.append(e)
    return entries


def by_name(entries):
    return {e['name']: e for e in entries}


def domain(dom):
    """'u:LO:HI' / 'h:LO:HI' / 'r' / 'i:LO:HI' -> gen_oracle's domain tuple."""
    if dom == 'r':
        return ('recip',)
    kind, lo, hi = dom.split(':')
    lo, hi = float(lo), float(hi)
    if kind == 'u':
        return (lo, hi)
    if kind == 'h':
        return ('half', lo, hi)
    if kind == 'i':
        return ('int', int(lo), int(hi) - 1)   # inclusive, like gen_oracle's ('int', lo, hi)
    raise ValueError('bad domain %r' % dom)


def tol_class(e):
    return e['tol'].split(':')[0]
