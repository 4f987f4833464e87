#!/usr/bin/python3
"""Peer timings for bench/ops: the same ops through PyTorch and numpy.

Run by bench_ops (through popen) as

    /usr/bin/python3 bench/peer_ops.py --threads N [--quick]

and prints one line per measurement on stdout:

    torch add 1048576 1.234e-04        <peer> <op> <elements> <seconds per op>
    info torch 1.13.1 capability=AVX512 threads=2 (ATEN_CPU_CAPABILITY=avx512 (best on this CPU))
    info numpy missing <reason>

Every op allocates its result, as a user writes it (c = a + b). Timing is
timeit-style: a warm-up/calibration pass picks the iteration count n so that
one repeat of n calls takes at least --min-time seconds, then --repeats such
repeats are timed and the median per-call time is printed.

Environment, set here before the imports so that running the script by hand
measures the same thing bench_ops does:
  ATEN_CPU_CAPABILITY         avx512 only where /proc/cpuinfo lists avx512f,
                              bw, vl and dq (PyTorch otherwise runs its AVX2
                              kernels on AVX-512 machines; forcing avx512
                              elsewhere is SIGILL), else avx2 (avx2 + fma),
                              else default; WICK_ISA=avx2 / scalar lowers it
                              to avx2 / default like wick's kernels. A value
                              already in the environment is kept unless the
                              CPU lacks it.
  OPENBLAS_NUM_THREADS=N      numpy's BLAS uses the same thread count
  OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE are removed (they force AVX2 BLAS kernels)
"""
import argparse
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="small sizes, few iterations")
    p.add_argument("--sizes", default=None,
                   help="comma-separated element counts (default 1K,64K,1M,16M)")
    p.add_argument("--min-time", type=float, default=None,
                   help="seconds per timed repeat (default 0.05, quick 0.002)")
    p.add_argument("--repeats", type=int, default=None, help="default 5 (quick 3)")
    p.add_argument("--peers", default="torch,numpy")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="cpu: time by the calling thread's CPU time (time.thread_time; "
                        "bench_ops passes it for 1-thread tables with --clock cpu)")
    return p.parse_args()


ARGS = parse_args()


def cpu_flags():
    """The x86 feature flags of this CPU (/proc/cpuinfo), or None if unknown."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


# PyTorch's avx512 kernels are built for AVX512F+BW+VL+DQ; forcing them on a
# CPU without these dies with SIGILL, so avx512 is chosen only when they are
# all present. WICK_ISA=avx2/scalar (which lowers wick's kernels) lowers the
# peer to the same level, so that the columns compare like with like.
AVX512_NEEDS = {"avx512f", "avx512bw", "avx512vl", "avx512dq"}
AVX2_NEEDS = {"avx2", "fma"}
CAP_RANK = {"default": 0, "avx2": 1, "avx512": 2}


def choose_capability(env):
    """(ATEN_CPU_CAPABILITY to use, or None to leave PyTorch's own choice; a note)."""
    flags = cpu_flags()
    if flags is None:
        best = None  # not Linux/x86 or unreadable: PyTorch detects by itself
    elif AVX512_NEEDS <= flags:
        best = "avx512"
    elif AVX2_NEEDS <= flags:
        best = "avx2"
    else:
        best = "default"
    want = best
    isa = env.get("WICK_ISA", "").strip().lower()
    if isa in ("avx2", "scalar"):
        want = "avx2" if isa == "avx2" else "default"
        if best is not None and CAP_RANK[want] > CAP_RANK[best]:
            want = best
    given = env.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    if given:
        if given in CAP_RANK and best is not None and CAP_RANK[given] > CAP_RANK[best]:
            return best, "ATEN_CPU_CAPABILITY=%s lowered to %s (not on this CPU)" % (given, best)
        return given, "ATEN_CPU_CAPABILITY=%s (from the environment)" % given
    if want is None:
        return None, "CPU flags unknown: PyTorch chooses"
    why = "WICK_ISA=" + isa if isa in ("avx2", "scalar") else "best on this CPU"
    return want, "ATEN_CPU_CAPABILITY=%s (%s)" % (want, why)


CAPABILITY, CAPABILITY_NOTE = choose_capability(os.environ)
if CAPABILITY is not None:
    os.environ["ATEN_CPU_CAPABILITY"] = CAPABILITY
os.environ["OPENBLAS_NUM_THREADS"] = str(ARGS.threads)
os.environ["OMP_NUM_THREADS"] = str(ARGS.threads)
os.environ.pop("OPENBLAS_CORETYPE", None)
os.environ.pop("OPENBLAS_L2_SIZE", None)

ROW = 1024  # row length of the row ops (sum, softmax); every size is a multiple
EXP_IN_CACHE = 4096  # exp is also measured here (in cache)


def sizes():
    if ARGS.sizes:
        return [int(s) for s in ARGS.sizes.split(",") if s]
    if ARGS.quick:
        return [1024, 65536]
    return [1024, 65536, 1 << 20, 16 << 20]


MIN_TIME = ARGS.min_time if ARGS.min_time is not None else (0.002 if ARGS.quick else 0.05)
REPEATS = ARGS.repeats if ARGS.repeats is not None else (3 if ARGS.quick else 5)


def out(*fields):
    print(*fields, flush=True)


def bench(fn):
    """Median seconds per call of fn() (timeit-style autorange + repeats)."""
    perf = time.thread_time if ARGS.clock == "cpu" else time.perf_counter
    fn()  # warm-up (first-touch, lazy init)
    n = 1
    while True:
        t0 = perf()
        for _ in range(n):
            fn()
        dt = perf() - t0
        if dt >= MIN_TIME:
            break
        # grow towards the target, as timeit.autorange does, but faster
        n = max(n * 2, int(n * MIN_TIME / max(dt, 1e-9) * 1.1)) if dt > 0 else n * 10
    times = []
    for _ in range(REPEATS):
        t0 = perf()
        for _ in range(n):
            fn()
        times.append((perf() - t0) / n)
    return statistics.median(times)


def shape_of(n):
    return (n // ROW, ROW) if n >= ROW and n % ROW == 0 else (n,)


def run_torch():
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001
        out("info", "torch", "missing", repr(e).replace("\n", " ")[:200])
        return
    torch.set_num_threads(ARGS.threads)
    cap = "?"
    try:
        for line in torch.__config__.show().splitlines():
            if "CPU capability usage" in line:
                cap = line.split(":", 1)[1].strip()
    except Exception:  # noqa: BLE001
        pass
    out("info", "torch", torch.__version__, "capability=" + cap,
        "threads=%d" % torch.get_num_threads(), "(" + CAPABILITY_NOTE + ")")
    torch.manual_seed(0)

    def one_size(n):  # inputs live only while this size is measured
        shp = shape_of(n)
        a = torch.rand(shp) * 8 - 4
        b = torch.rand(shp) * 8 - 4
        ops = [
            ("add", lambda: torch.add(a, b)),
            ("mul", lambda: torch.mul(a, b)),
            ("exp", lambda: torch.exp(a)),
            ("gelu", lambda: F.gelu(a, approximate="tanh")),
            ("sum", lambda: torch.sum(a, -1)),
            ("softmax", lambda: _torch_softmax_composite(a)),
            ("softmax_fused", lambda: torch.softmax(a, -1)),
        ]
        for name, fn in ops:
            out("torch", name, n, "%.6e" % bench(fn))

    with torch.no_grad():
        for n in sizes():
            one_size(n)
        if not ARGS.sizes:
            a = torch.rand(EXP_IN_CACHE) * 8 - 4
            out("torch", "exp", EXP_IN_CACHE, "%.6e" % bench(lambda: torch.exp(a)))
        a2 = torch.rand(2, 2)
        b2 = torch.rand(2, 2)
        a1 = torch.rand(1)
        out("torch", "tiny_add", 4, "%.6e" % bench(lambda: torch.add(a2, b2)))
        out("torch", "tiny_matmul", 4, "%.6e" % bench(lambda: torch.matmul(a2, b2)))
        out("torch", "tiny_exp", 1, "%.6e" % bench(lambda: torch.exp(a1)))


def _torch_softmax_composite(x):
    import torch
    e = torch.exp(x - torch.amax(x, -1, keepdim=True))
    return e / torch.sum(e, -1, keepdim=True)


def _np_gelu_tanh(x):
    import numpy as np
    # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), written as a numpy user
    # would (x*x*x rather than x**3, which goes through pow).
    return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * (x * x * x))))


def _np_softmax(x):
    import numpy as np
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def run_numpy():
    try:
        import numpy as np
    except Exception as e:  # noqa: BLE001
        out("info", "numpy", "missing", repr(e).replace("\n", " ")[:200])
        return
    out("info", "numpy", np.__version__, "threads=1(elementwise)")
    rng = np.random.default_rng(0)

    def one_size(n):  # inputs live only while this size is measured
        shp = shape_of(n)
        a = rng.uniform(-4, 4, shp).astype(np.float32)
        b = rng.uniform(-4, 4, shp).astype(np.float32)
        ops = [
            ("add", lambda: np.add(a, b)),
            ("mul", lambda: np.multiply(a, b)),
            ("exp", lambda: np.exp(a)),
            ("gelu", lambda: _np_gelu_tanh(a)),
            ("sum", lambda: np.sum(a, -1)),
            ("softmax", lambda: _np_softmax(a)),
        ]
        for name, fn in ops:
            out("numpy", name, n, "%.6e" % bench(fn))

    for n in sizes():
        one_size(n)
    if not ARGS.sizes:
        a = rng.uniform(-4, 4, EXP_IN_CACHE).astype(np.float32)
        out("numpy", "exp", EXP_IN_CACHE, "%.6e" % bench(lambda: np.exp(a)))
    a2 = rng.random((2, 2), dtype=np.float32)
    b2 = rng.random((2, 2), dtype=np.float32)
    a1 = rng.random(1, dtype=np.float32)
    out("numpy", "tiny_add", 4, "%.6e" % bench(lambda: np.add(a2, b2)))
    out("numpy", "tiny_matmul", 4, "%.6e" % bench(lambda: np.matmul(a2, b2)))
    out("numpy", "tiny_exp", 1, "%.6e" % bench(lambda: np.exp(a1)))


def main():
    peers = [p for p in ARGS.peers.split(",") if p]
    if "torch" in peers:
        run_torch()
    if "numpy" in peers:
        run_numpy()
    return 0


if __name__ == "__main__":
    sys.exit(main())
