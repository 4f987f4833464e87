#!/usr/bin/env bash
# Build wick (Release) and run bench/ops: wick's common ops beside PyTorch and
# numpy (through /usr/bin/python3), measured in the same run. See bench/README.md.
#   scripts/bench-ops.sh                  full run, 1- and 2-thread tables (a few minutes)
#   scripts/bench-ops.sh --quick          smoke run (small sizes, few iterations; seconds)
#   scripts/bench-ops.sh --threads 1 --no-peers ...   other bench_ops options pass through
# BUILD_DIR selects the build folder (default: build, as scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" --target bench_ops -j"$(nproc)"
exec "$dir/bench/bench_ops" --peer-script "$PWD/bench/peer_ops.py" "$@"
