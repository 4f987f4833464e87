#!/usr/bin/env python3
"""Per-call overhead of wick from Python on tiny tensors, beside numpy and
PyTorch, and one big out-of-place add -- one table, one run.

    PYTHONPATH=build/python .venv/bin/python bench/python/bench_overhead.py
    ... bench_overhead.py --quick          # CI smoke run: few repeats (a few seconds)
    ... bench_overhead.py --clock cpu      # tiny ops timed by the thread's CPU time

Tiny rows: 2x2 f32 operands, each statement timed by timeit (no Python
function call around it), `--repeats` repeats of `--number` calls; the cell
is the median repeat in ns per call. Ratios below 1 mean wick is cheaper.
PyTorch runs with torch.set_num_threads(1) (its intra-op pool only costs on
tiny tensors); wick and numpy keep their defaults. A row wick lacks in this
build (a part not merged yet) shows n/a.

The big row: c = a + b on 16 M f32 elements (64 MiB per operand, a fresh
output each call), the median of `--big-repeats` calls, in ms and in GB/s
counting 3 x 64 MiB moved (two reads, one write). `--clock cpu` does not
apply to it (wick's pool runs on other threads).
"""
import argparse
import os
import statistics
import sys
import time
import timeit

BIG = 16 * 1024 * 1024


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def libraries():
    libs = {}
    import wick
    libs["wick"] = wick
    try:
        import numpy
        libs["numpy"] = numpy
    except ImportError:
        pass
    try:
        import torch
        torch.set_num_threads(1)
        libs["torch"] = torch
    except ImportError:
        pass
    return libs


def tiny_setup(name, lib):
    """Globals for the tiny statements: two 2x2 f32 operands a, b."""
    if name == "wick":
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype="f32")
        b = lib.tensor([[0.5, 0.25], [2.0, 1.0]], dtype="f32")
    elif name == "numpy":
        a = lib.array([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float32)
        b = lib.array([[0.5, 0.25], [2.0, 1.0]], dtype=lib.float32)
    else:
        a = lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float32)
        b = lib.tensor([[0.5, 0.25], [2.0, 1.0]], dtype=lib.float32)
    return {"a": a, "b": b, name: lib, "lib": lib}


# row -> {library: statement}; None: the library has no such call
ROWS = [
    ("add a + b", {"wick": "a + b", "numpy": "a + b", "torch": "a + b"}),
    ("mul a * b", {"wick": "a * b", "numpy": "a * b", "torch": "a * b"}),
    ("neg -a", {"wick": "-a", "numpy": "-a", "torch": "-a"}),
    ("exp a.exp()", {"wick": "a.exp()", "numpy": "lib.exp(a)", "torch": "a.exp()"}),
    ("sum a.sum()", {"wick": "a.sum()", "numpy": "a.sum()", "torch": "a.sum()"}),
    ("matmul a @ b", {"wick": "a @ b", "numpy": "a @ b", "torch": "a @ b"}),
    ("index a[0]", {"wick": "a[0]", "numpy": "a[0]", "torch": "a[0]"}),
    ("zeros(2, 2)", {"wick": "lib.zeros(2, 2)", "numpy": "lib.zeros((2, 2), lib.float32)", "torch": "lib.zeros(2, 2)"}),
    ("transpose a.mT", {"wick": "a.mT", "numpy": "a.T", "torch": "a.mT"}),
    ("reshape a.reshape(4)", {"wick": "a.reshape(4)", "numpy": "a.reshape(4)", "torch": "a.reshape(4)"}),
    ("shape a.shape", {"wick": "a.shape", "numpy": "a.shape", "torch": "a.shape"}),
]


def time_tiny(stmt, env, number, repeats, clock):
    try:
        eval(stmt, env)  # probe: raises when this build lacks the call
    except (AttributeError, TypeError, NotImplementedError):
        return None
    t = timeit.Timer(stmt, globals=env, timer=clock)
    runs = t.repeat(repeat=repeats, number=number)
    return statistics.median(runs) / number * 1e9


def time_big(name, lib, repeats):
    if name == "wick":
        a, b = lib.rand(BIG), lib.rand(BIG)
    elif name == "numpy":
        rng = lib.random.default_rng(0)
        a, b = rng.random(BIG, dtype=lib.float32), rng.random(BIG, dtype=lib.float32)
    else:
        a, b = lib.rand(BIG), lib.rand(BIG)
    c = a + b  # warm: page faults of the first output, thread pools
    del c
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        c = a + b
        runs.append(time.perf_counter() - t0)
        del c
    return statistics.median(runs) * 1e3


def fmt(v, unit=""):
    return "n/a" if v is None else f"{v:,.0f}{unit}"


def ratio(x, y):
    return "n/a" if x is None or y is None else f"{x / y:.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="few repeats (CI smoke run)")
    ap.add_argument("--number", type=int, help="calls per timed repeat (default 20000; --quick 2000)")
    ap.add_argument("--repeats", type=int, help="timed repeats per row (default 15; --quick 3)")
    ap.add_argument("--big-repeats", type=int, help="timed 16M adds (default 10; --quick 2)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="tiny rows: wall time, or this thread's CPU time (steadier on a loaded machine)")
    a = ap.parse_args(argv)
    number = a.number or (2000 if a.quick else 20000)
    repeats = a.repeats or (3 if a.quick else 15)
    big_repeats = a.big_repeats or (2 if a.quick else 10)
    clock = time.perf_counter if a.clock == "wall" else time.thread_time

    libs = libraries()
    wick = libs["wick"]
    names = [n for n in ("wick", "numpy", "torch") if n in libs]
    vers = ", ".join(f"{n} {getattr(libs[n], '__version__', '?')}" for n in names)
    threads = f"wick {wick.get_num_threads()} threads ({wick.cpu_isa()})"
    if "torch" in libs:
        threads += f", torch {libs['torch'].get_num_threads()}"
    print(f"# bench_overhead: {cpu_name()}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print(f"# {vers}; {threads}; tiny rows: median of {repeats} x {number} calls, {a.clock} clock, ns per call")
    print()
    hdr = ["op (2x2 f32)"] + [f"{n} ns" for n in names]
    if "torch" in libs:
        hdr.append("wick/torch")
    if "numpy" in libs:
        hdr.append("wick/numpy")
    rows = []
    envs = {n: tiny_setup(n, libs[n]) for n in names}
    for label, stmts in ROWS:
        cells = {n: time_tiny(stmts[n], envs[n], number, repeats, clock) for n in names}
        row = [label] + [fmt(cells[n]) for n in names]
        if "torch" in libs:
            row.append(ratio(cells["wick"], cells["torch"]))
        if "numpy" in libs:
            row.append(ratio(cells["wick"], cells["numpy"]))
        rows.append(row)
    big = {n: time_big(n, libs[n], big_repeats) for n in names}
    moved = 3 * BIG * 4 / 1e9
    row = [f"add 16M f32 (ms)"] + [f"{big[n]:.2f}" for n in names]
    if "torch" in libs:
        row.append(ratio(big["wick"], big["torch"]))
    if "numpy" in libs:
        row.append(ratio(big["wick"], big["numpy"]))
    rows.append(row)
    rows.append(["add 16M f32 (GB/s)"] + [f"{moved / (big[n] / 1e3):.1f}" for n in names] +
                [""] * (len(hdr) - 1 - len(names)))
    widths = [max(len(r[i]) for r in rows + [hdr]) for i in range(len(hdr))]
    line = lambda r: "| " + " | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"
    print(line(hdr))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
