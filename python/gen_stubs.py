#!/usr/bin/env python3
"""Writes python/wick/_wick.pyi, the type stubs of the extension wick._wick,
from the built module itself.

    PYTHONPATH=build/python .venv/bin/python python/gen_stubs.py          # write
    PYTHONPATH=build/python .venv/bin/python python/gen_stubs.py --check  # compare

The binding's rule (python/src/wkpy.h): the first line of every function's
and method's docstring is its signature as Python would show it, with
defaults, e.g. "sum(dim=None, keepdim=False)" (an optional "-> Type"
return annotation may follow), then what it does. This script reads that
line, checks it is a valid Python signature with ast, and writes one stub
entry per public name: module functions, the classes the module defines
(wick.Tensor, wick.dtype, wick.device, the exception classes and any other
C type a part adds) with their methods, operators and typed properties, and
the module's constants (wick.f32, wick.cpu, ...).

It fails loudly -- exit status 1, listing every offender, writing nothing --
when a callable has no docstring, or one whose first line is not a
signature of that name. Property types are those of the values a sample
object returns (Any when the sample gives None or raises).
"""
import argparse
import ast
import builtins
import difflib
import importlib
import inspect
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.join(HERE, "wick", "_wick.pyi")
MODULE = "wick._wick"

# Dunders whose result type does not depend on the class.
FIXED_RETURN = {
    "__len__": "int", "__bool__": "bool", "__int__": "int", "__index__": "int", "__float__": "float",
    "__hash__": "int", "__repr__": "str", "__str__": "str", "__setitem__": "None", "__delitem__": "None",
    "__init__": "None", "__contains__": "bool", "__iter__": "Iterator[Any]", "__enter__": "Any",
    "__exit__": "Optional[bool]",
}
COMPARISONS = {"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"}
# Slot wrappers every class has through object: not worth a stub line.
OBJECT_SLOTS = set(vars(object))


class StubError(Exception):
    pass


def first_line(doc):
    return (doc or "").strip().splitlines()[0].strip() if (doc or "").strip() else ""


def split_signature(line, name):
    """'name(args) -> T: text' -> ('args', 'T' or None); None when the line
    does not start with a balanced call of that name."""
    if not line.startswith(name + "("):
        return None
    depth, quote, i = 0, None, len(name)
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                break
        i += 1
    if depth != 0:
        return None
    args, rest = line[len(name) + 1 : i], line[i + 1 :]
    ret = None
    m = re.match(r"\s*->\s*([^:]+?)\s*(?::|\.\s|\.$|$)", rest)
    if m:
        ret = m.group(1).strip()
    return args, ret


def parse_def(name, args, ret):
    """A def of that signature as an ast.FunctionDef (raises SyntaxError)."""
    src = f"def {name}({args}){' -> ' + ret if ret else ''}: ...\n"
    node = ast.parse(src).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def stub_args(node, self_name=None):
    """The parameters of node with every default written `...` (a stub's
    convention: defaults such as `dtype=f32` name objects the stub need not
    import) and self / cls first where given."""
    a = node.args
    a.defaults = [ast.Constant(value=...) for _ in a.defaults]
    a.kw_defaults = [None if d is None else ast.Constant(value=...) for d in a.kw_defaults]
    if self_name:
        (a.posonlyargs if a.posonlyargs else a.args).insert(0, ast.arg(arg=self_name))
    return ast.unparse(a)


def text_signature_args(sig):
    """'($self, value, /)' -> ('self, value, /', True): CPython's
    __text_signature__ with its $-marked bound parameter."""
    inner = sig.strip()[1:-1]
    parts = [p.strip() for p in inner.split(",") if p.strip()]
    bound = bool(parts) and parts[0].startswith("$")
    if bound:
        parts[0] = parts[0][1:]
        if parts[0] == "module":
            parts = parts[1:]
            bound = False
    return ", ".join(parts), bound


def doc_block(doc, indent):
    doc = inspect.cleandoc(doc or "")
    if not doc:
        return []
    doc = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = doc.splitlines()
    if len(lines) == 1:
        return [f'{indent}"""{lines[0]}"""']
    return [f'{indent}"""{lines[0]}'] + [(indent + l) if l else "" for l in lines[1:]] + [f'{indent}"""']


class Generator:
    def __init__(self, mod, docstrings=True):
        self.mod = mod
        self.docstrings = docstrings
        self.errors = []  # "qualname: problem (first line: ...)"
        self.classes = {n: o for n, o in vars(mod).items() if isinstance(o, type) and not n.startswith("_")}
        # a second module name for a class (wick.Bert is wick.SentenceEncoder): `Bert = SentenceEncoder`
        self.class_aliases = {n: o.__name__.rsplit(".", 1)[-1] for n, o in self.classes.items()
                              if o.__name__.rsplit(".", 1)[-1] != n
                              and self.classes.get(o.__name__.rsplit(".", 1)[-1]) is o}
        for n in self.class_aliases:
            del self.classes[n]
        self.shadow = set()  # names of classes shadowed by a member of the class being written
        self.aliases = set()  # module-level aliases the stubs need for those

    def error(self, qual, problem, doc):
        self.errors.append(f"{qual}: {problem} (first line: {first_line(doc)!r})")

    def type_name(self, v):
        """A stub type for a sample value."""
        if v is None:
            return "Any"
        t = type(v)
        for n, c in self.classes.items():
            if t is c:
                if n in self.shadow:  # Tensor.dtype -> dtype: a class member would shadow the class
                    self.aliases.add(n)
                    return f"_{n}_t"
                return n
        if t in (bool, int, float, str, bytes):
            return t.__name__
        if t is tuple:
            inner = {self.type_name(x) for x in v}
            return f"tuple[{inner.pop()}, ...]" if len(inner) == 1 else "tuple[Any, ...]"
        if t is list:
            return "list[Any]"
        if t is dict:
            return "dict[str, Any]"
        return "Any"

    # ---- callables ----

    def function(self, name, obj, indent="", self_name=None, qual=None, decorator=None):
        qual = qual or name
        doc = obj.__doc__
        ts = getattr(obj, "__text_signature__", None)
        ret = None
        if ts:  # "name(sig)\n--\n\n" docstrings: CPython moved the line here
            args, bound = text_signature_args(ts)
            try:
                node = parse_def(name, args, None)
            except SyntaxError as e:
                self.error(qual, f"__text_signature__ {ts!r} does not parse ({e.msg})", doc)
                return []
            # a bound signature already names self / cls first
            params = stub_args(node, None if bound else self_name)
        else:
            line = first_line(doc)
            if not line:
                self.error(qual, "no docstring (its first line must be the signature)", doc)
                return []
            sig = split_signature(line, name)
            if sig is None:
                self.error(qual, f"the docstring's first line is not a signature '{name}(...)'", doc)
                return []
            args, ret = sig
            try:
                node = parse_def(name, args, ret)
            except SyntaxError as e:
                self.error(qual, f"the signature does not parse as Python ({e.msg})", doc)
                return []
            params = stub_args(node, self_name)
        out = [f"{indent}@{decorator}"] if decorator else []
        r = f" -> {ret}" if ret else ""
        body = doc_block(doc, indent + "    ") if self.docstrings else []
        if body:
            out.append(f"{indent}def {name}({params}){r}:")
            out += body
        else:
            out.append(f"{indent}def {name}({params}){r}: ...")
        return out

    def slot(self, cls_name, name, obj, arithmetic):
        """An operator / protocol slot (wrapper_descriptor) of a class."""
        args, _ = text_signature_args(obj.__text_signature__ or "($self, /)")
        if name in FIXED_RETURN:
            ret = FIXED_RETURN[name]
        elif name in COMPARISONS:
            ret = cls_name if arithmetic else "bool"
        elif name == "__getitem__" or arithmetic:
            ret = cls_name
        else:
            ret = "Any"
        if name == "__hash__":
            return ["    def __hash__(self) -> int: ..."]
        # what numpy's and torch's stubs do too: elementwise == returns a
        # tensor (object's returns bool); a op= b takes no modulo
        ignore = ""
        if name in COMPARISONS and ret != "bool":
            ignore = "  # type: ignore[override]"
        elif name == "__ipow__":
            ignore = "  # type: ignore[misc]"
        return [f"    def {name}({args}) -> {ret}: ...{ignore}"]

    # ---- classes ----

    def samples(self, cls):
        m = self.mod
        if cls.__name__ == "Tensor":
            out = []
            for kw in ({}, {"requires_grad": True}):
                try:
                    out.append(m.zeros(2, 2, **kw))
                except Exception:
                    pass
            return out
        consts = [v for v in vars(m).values() if type(v) is cls]
        return consts[:1]

    def property_type(self, cls, name):
        for s in self.samples(cls):
            try:
                v = getattr(s, name)
            except Exception:
                continue
            if v is not None:
                return self.type_name(v)
        return "Any"

    def klass(self, name, cls):
        lines = []
        if issubclass(cls, BaseException):
            bases = []
            for b in cls.__bases__:
                if b.__module__ == "builtins":
                    bases.append(f"builtins.{b.__name__}")
                elif b.__name__ in self.classes and self.classes[b.__name__] is b:
                    bases.append(b.__name__)
                else:
                    raise StubError(f"{name}: base class {b!r} is neither a builtin nor a class of {MODULE}")
            lines.append(f"class {name}({', '.join(bases)}):")
            body = doc_block(cls.__doc__, "    ") if self.docstrings else []
            return lines + (body or ["    ..."])
        if not cls.__flags__ & (1 << 10):  # no Py_TPFLAGS_BASETYPE: subclassing raises TypeError
            lines.append("@final")
        lines.append(f"class {name}:")
        if self.docstrings:
            lines += doc_block(cls.__doc__, "    ")
        d = vars(cls)
        arithmetic = "__add__" in d
        self.shadow = {a for a in d if a in self.classes}
        ordered = arithmetic or self.orders(cls)
        if "__new__" in d:  # constructible: the class docstring's first line is its signature
            sig = split_signature(first_line(cls.__doc__), name)
            if sig is None:
                self.error(name, f"a constructible class's docstring must start with '{name}(...)'", cls.__doc__)
            else:
                try:
                    node = parse_def("__new__", sig[0], None)
                    lines.append(f"    def __new__({stub_args(node, 'cls')}) -> {name}: ...")
                except SyntaxError as e:
                    self.error(name, f"the constructor signature does not parse as Python ({e.msg})", cls.__doc__)
        for attr in sorted(d):
            obj = d[attr]
            kind = type(obj).__name__
            if attr in ("__doc__", "__new__", "__module__", "__dict__", "__weakref__"):
                continue
            if kind in ("getset_descriptor", "member_descriptor"):
                t = self.property_type(cls, attr)
                readonly = kind == "getset_descriptor" and not self.has_setter(cls, attr)
                if readonly:
                    lines.append("    @property")
                    doc = doc_block(obj.__doc__, "        ") if self.docstrings else []
                    if doc:
                        lines += [f"    def {attr}(self) -> {t}:"] + doc
                    else:
                        lines.append(f"    def {attr}(self) -> {t}: ...")
                else:
                    lines.append(f"    {attr}: {t}")
            elif kind == "wrapper_descriptor":
                if attr in OBJECT_SLOTS and attr not in COMPARISONS | {"__hash__", "__repr__", "__str__"}:
                    continue
                if attr in ("__lt__", "__le__", "__gt__", "__ge__") and not ordered:
                    continue  # the slot is there for == / != only: t < u raises TypeError
                lines += self.slot(name, attr, obj, arithmetic)
            elif kind == "method_descriptor":
                lines += self.function(attr, obj, "    ", "self", f"{name}.{attr}")
            elif kind == "classmethod_descriptor":
                lines += self.function(attr, obj, "    ", "cls", f"{name}.{attr}", "classmethod")
            elif kind == "builtin_function_or_method":  # METH_STATIC
                lines += self.function(attr, obj, "    ", None, f"{name}.{attr}", "staticmethod")
            elif not attr.startswith("__"):
                lines.append(f"    {attr}: {self.type_name(obj)}")
        self.shadow = set()
        if len(lines) == 1:
            lines.append("    ...")
        return lines

    def orders(self, cls):
        """Whether a sample supports <: a richcompare slot may serve == only."""
        for s in self.samples(cls):
            try:
                s < s
                return True
            except TypeError:
                return False
        return False

    def has_setter(self, cls, attr):
        """A getset with a setter: assigning the value it already has works
        (or fails with something other than "not writable")."""
        for s in self.samples(cls):
            try:
                setattr(s, attr, getattr(s, attr))
                return True
            except AttributeError as e:
                if "not writable" in str(e) or "readonly" in str(e):
                    return False
                return True
            except Exception:
                return True
        return False

    # ---- the module ----

    def generate(self):
        mod = self.mod
        out = [
            f'"""Type stubs of {MODULE}: generated by python/gen_stubs.py from the built module\'s docstrings.',
            "Do not edit by hand: rebuild the module, then run python/gen_stubs.py.",
            '"""',
            "import builtins",
            "from typing import Any, Iterator, Optional, TypeAlias, final",
            "",
        ]
        names = sorted(n for n in vars(mod) if not n.startswith("_") or n == "__version__")
        # classes first (bases before subclasses), then functions, then constants
        classes = [n for n in names if n in self.classes]
        classes.sort(key=lambda n: (len(self.classes[n].__mro__), n))
        for n in classes:
            out += self.klass(n, self.classes[n]) + [""]
        for n in sorted(self.class_aliases):
            out += [f"{n} = {self.class_aliases[n]}", ""]
        for n in names:
            o = getattr(mod, n)
            if n in self.classes or n in self.class_aliases:
                continue
            if callable(o):
                out += self.function(n, o)
        out.append("")
        for n in names:
            o = getattr(mod, n)
            if n in self.classes or n in self.class_aliases or callable(o):
                continue
            out.append(f"{n}: {self.type_name(o)}")
        if self.aliases:
            out.append("")
        for n in sorted(self.aliases):
            out.append(f"_{n}_t: TypeAlias = {n}")
        text = "\n".join(out).rstrip("\n") + "\n"
        try:
            ast.parse(text)
        except SyntaxError as e:
            raise StubError(f"the generated stubs do not parse: line {e.lineno}: {e.msg}: {e.text!r}")
        return text


def generate(mod=None, docstrings=True):
    """(stub text, [errors]) for the module (imported when not given)."""
    mod = mod or importlib.import_module(MODULE)
    g = Generator(mod, docstrings)
    text = g.generate()
    return text, g.errors


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=DEFAULT_OUT, help="the .pyi to write (default: %(default)s)")
    ap.add_argument("--check", action="store_true", help="compare with the existing file instead of writing it")
    a = ap.parse_args(argv)
    # python/ itself is sys.path[0] when run as a script: its wick/ is the
    # source package without the extension; import the built one instead
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
    try:
        text, errors = generate()
    except StubError as e:
        print(f"gen_stubs: {e}", file=sys.stderr)
        return 1
    if errors:
        print(f"gen_stubs: {len(errors)} callable(s) of {MODULE} without a signature line:", file=sys.stderr)
        for e in errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    if a.check:
        old = open(a.output, encoding="utf-8").read() if os.path.exists(a.output) else ""
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True), a.output, "generated"))
            print(f"gen_stubs: {a.output} is out of date (run python/gen_stubs.py)", file=sys.stderr)
            return 1
        return 0
    with open(a.output, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"gen_stubs: wrote {a.output} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
