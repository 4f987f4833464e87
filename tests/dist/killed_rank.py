#!/usr/bin/python3
"""Fault: a rank killed mid-collective ends the whole job within a bound.

Runs fault_kill under `mpirun -np 2`: rank 1 raise(SIGKILL)s itself in the
middle of a large all_reduce. Asserts that mpirun exits within BOUND
seconds with a nonzero status, and that its output names the dead rank
(Open MPI's launcher: "process rank 1 ... exited on signal 9"; or our own
WK_ERR_COMM message naming "rank 1" if our polling saw MPI's error first).

usage: killed_rank.py MPIEXEC FAULT_KILL_BINARY
"""
import os
import re
import subprocess
import sys
import time

BOUND = 20.0  # seconds, from start to mpirun's exit


def main():
    mpiexec, prog = sys.argv[1], sys.argv[2]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               WICK_DIST_TIMEOUT="60")  # longer than BOUND: the launcher must be what ends it
    t0 = time.monotonic()
    try:
        p = subprocess.run([mpiexec, "--oversubscribe", "-np", "2", prog], env=env, capture_output=True,
                           text=True, timeout=BOUND + 30)
    except subprocess.TimeoutExpired as e:
        print(f"FAIL: mpirun still running after {BOUND + 30:.0f} s (a hang)\n{e.stdout}\n{e.stderr}")
        return 1
    dt = time.monotonic() - t0
    out = (p.stdout or "") + (p.stderr or "")
    print(out)
    print(f"mpirun exit status {p.returncode} after {dt:.1f} s (bound {BOUND:.0f} s)")
    ok = True
    if p.returncode == 0:
        print("FAIL: mpirun exited 0 although rank 1 was killed")
        ok = False
    if dt > BOUND:
        print(f"FAIL: took {dt:.1f} s, over the {BOUND:.0f} s bound")
        ok = False
    if not re.search(r"rank 1\b", out):
        print("FAIL: the output does not name the dead rank (rank 1)")
        ok = False
    if "finished 1000 all_reduces" in out:
        print("FAIL: rank 0 went on without rank 1")
        ok = False
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
