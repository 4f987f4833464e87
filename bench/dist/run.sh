#!/usr/bin/env bash
# bench/dist: the whole matrix on this machine (see bench/README.md, "dist").
#
#   bench/dist/run.sh [--quick] [-m MODEL.gguf]
#
#   1. collectives: wick beside Open MPI's own on 2 ranks (bench_dist_allreduce)
#   2. the model:   1 rank x 2 threads, then 2 ranks x 1 thread tensor
#                   parallel (TP) and pipeline parallel (PP) (bench_dist_lm;
#                   default Qwen2.5-Coder 1.5B Q4_K_M, 128-token prompt, 64
#                   decoded tokens)
#   3. DDP:         an MLP's training step, global batch 64, 1 rank x 2
#                   threads, then 2 ranks x 1 thread (bench_dist_ddp)
# Threads are set with WICK_NUM_THREADS (wick's CPU thread count; the API
# is wk_set_num_threads); ranks are not bound to cores (--bind-to none), so
# the kernel places them as it places the 1-rank run's two threads.
# BUILD=dir picks the build (default build/); PRIO="nice -n -10" runs every
# benchmark under that prefix (on a machine shared with niced builds, so the
# ranks are not descheduled mid-transfer); --quick: small sizes, for a smoke
# test of the script itself.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${BUILD:-build}/bench
quick=() model=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=(--quick) ;;
    -m) model=(-m "$2"); shift ;;
    *) echo "usage: bench/dist/run.sh [--quick] [-m MODEL.gguf]" >&2; exit 2 ;;
  esac
  shift
done
for b in bench_dist_allreduce bench_dist_lm bench_dist_ddp; do
  [ -x "$B/$b" ] || { echo "run.sh: $B/$b not built (cmake --build ${BUILD:-build})" >&2; exit 1; }
done
# Open MPI refuses root unless told; 2 cores: --oversubscribe for any count
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a prio <<<"${PRIO:-}"
mpi2() { "${prio[@]}" mpirun --oversubscribe --bind-to none -np 2 -x WICK_NUM_THREADS=1 "$@"; }
one() { WICK_NUM_THREADS=2 "${prio[@]}" "$@"; }

echo "== machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== 1. collectives, 2 ranks"
mpi2 "$B/bench_dist_allreduce" "${quick[@]}"

echo "== 2. model: 1 rank x 2 threads"
one "$B/bench_dist_lm" "${quick[@]}" "${model[@]}"
echo "== 2. model: 2 ranks x 1 thread, tensor parallel"
mpi2 "$B/bench_dist_lm" --tp "${quick[@]}" "${model[@]}"
echo "== 2. model: 2 ranks x 1 thread, pipeline parallel"
mpi2 "$B/bench_dist_lm" --pp "${quick[@]}" "${model[@]}"

echo "== 3. DDP: 1 rank x 2 threads"
one "$B/bench_dist_ddp" "${quick[@]}"
echo "== 3. DDP: 2 ranks x 1 thread"
mpi2 "$B/bench_dist_ddp" "${quick[@]}"
echo "== load after: $(cut -d' ' -f1-3 /proc/loadavg)"
