#!/usr/bin/python3
"""Run one training example in wick and in PyTorch from the same initial
weights and compare the loss curves (the ctest tests examples_*_vs_torch).

    run_compare.py digits EXE WORK_DIR [extra args for both sides...]
    run_compare.py char   EXE WORK_DIR [extra args for both sides...]
    run_compare.py digits-check EXE WORK_DIR [args]: the full wick run with
        --check alone (the >= 97% test accuracy of the issue)

The extra args (e.g. --steps 100 --epochs 3) go to both programs; the
comparison's own limits are those of digits_torch.py / char_transformer_torch.py
(--tol ...) and are passed as --tol / --acc-tol / --steps-compared only to
the torch side."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_ONLY = ("--tol", "--acc-tol", "--steps-compared")


def split(args):
    both, torch_only = [], []
    i = 0
    while i < len(args):
        (torch_only if args[i] in TORCH_ONLY else both).extend(args[i:i + 2])
        i += 2
    return both, torch_only


def run(cmd):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd)
    if r.returncode != 0:
        sys.exit(f"FAIL: {cmd[0]} exited {r.returncode}")


def main():
    try:
        import sklearn  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:  # ctest reads 77 as skipped
        print(f"SKIP: {e} (Debian's python3-torch and python3-sklearn: scripts/setup.sh)")
        sys.exit(77)
    kind, exe, work = sys.argv[1:4]
    both, torch_only = split(sys.argv[4:])
    os.makedirs(work, exist_ok=True)
    init, wl = os.path.join(work, "init.safetensors"), os.path.join(work, "wick_losses.json")
    py = sys.executable
    if kind == "digits-check":
        data = os.path.join(work, "data")
        run([py, os.path.join(HERE, "digits_data.py"), data])
        run([exe, "--data", data, "--check"] + both)
    elif kind == "digits":
        data = os.path.join(work, "data")
        run([py, os.path.join(HERE, "digits_data.py"), data])
        run([exe, "--data", data, "--init-out", init, "--losses-out", wl] + both)
        run([py, os.path.join(HERE, "digits_torch.py"), "--data", data, "--init", init, "--compare", wl]
            + both + torch_only)
    elif kind == "char":
        run([exe, "--init-out", init, "--losses-out", wl] + both)
        run([py, os.path.join(HERE, "char_transformer_torch.py"), "--init", init, "--compare", wl]
            + both + torch_only)
    else:
        sys.exit(f"unknown example {kind}")


if __name__ == "__main__":
    main()
