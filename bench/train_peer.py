#!/usr/bin/python3
"""PyTorch peer of bench/bench_train.c: the two training examples' models
(examples/digits_torch.py, examples/char_transformer_torch.py), same shapes.

    train_peer.py time STEPS B T d H L
        -> for each model (digits, char) and thread count (1, 2) one line
           "MODEL THREADS <median ms of STEPS steps after 2 warm-up steps>"
           (one process for all: starting torch takes longer than the rows)
    train_peer.py mem MODEL B T d H L
        -> "rss_delta_bytes <VmHWM after one forward + backward minus VmRSS before>"
A step is forward + mean cross-entropy + backward + AdamW step, as wick's.
Run "mem" in a fresh process per measurement (bench_train does): VmHWM is
the process's resident high-water mark, so the delta is the pass's peak
(tracemalloc does not see torch's allocations)."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from char_transformer_torch import VOCAB, CharTransformer  # noqa: E402
from digits_torch import DigitsCNN  # noqa: E402


def status_kb(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return -1


def setup(model, cfg):
    torch.manual_seed(0)
    if model == "digits":
        m = DigitsCNN()
        x, y = torch.rand(32, 1, 8, 8), torch.randint(0, 10, (32,))
        loss = lambda: F.cross_entropy(m(x), y)
    else:
        B, T, d, H, L = cfg
        m = CharTransformer(d, H, L, T)
        x, y = torch.randint(0, VOCAB, (B, T)), torch.randint(0, VOCAB, (B * T,))
        loss = lambda: F.cross_entropy(m(x).reshape(-1, VOCAB), y)
    return m, loss


def time_steps(model, threads, steps, cfg):
    torch.set_num_threads(threads)
    m, loss = setup(model, cfg)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=1e-2)
    times = []
    for s in range(steps + 2):
        t0 = time.perf_counter()
        l = loss()
        opt.zero_grad()
        l.backward()
        opt.step()
        if s >= 2:
            times.append(time.perf_counter() - t0)
    times.sort()
    return 1e3 * times[len(times) // 2]


def main():
    mode = sys.argv[1]
    if mode == "time":
        steps, cfg = int(sys.argv[2]), [int(v) for v in sys.argv[3:8]]
        for model in ("digits", "char"):
            for threads in (1, 2):
                print(f"{model} {threads} {time_steps(model, threads, steps, cfg):.4f}", flush=True)
    else:
        model = sys.argv[2]
        cfg = [int(v) for v in sys.argv[3:8]]
        torch.set_num_threads(1)
        m, loss = setup(model, cfg)
        before = status_kb("VmRSS")
        loss().backward()
        print(f"rss_delta_bytes {status_kb('VmHWM') - before}", flush=True)


if __name__ == "__main__":
    main()
