#!/usr/bin/env bash
# Build wick (Release) and run bench/qmatmul: wk_qmatmul beside llama.cpp's
# ggml on the same weights, measured in the same run. See bench/README.md.
#   scripts/bench-qmatmul.sh --install-peer      make the peer venv first (llama-cpp-python==0.3.36,
#                                                which compiles llama.cpp: ~8-30 min), then the full run
#   scripts/bench-qmatmul.sh                     full run with the existing venv (several minutes)
#   scripts/bench-qmatmul.sh --quick             smoke run (one shape, one type; seconds)
#   scripts/bench-qmatmul.sh --venv DIR ...      the peer venv (default: BENCH_VENV, else .bench-venv)
#   scripts/bench-qmatmul.sh --threads 1 --types q4_0,q8_0 ...   other bench_qmatmul options pass through
# The ggml libraries are found in DIR/lib/python3*/site-packages/llama_cpp/lib
# unless WICK_GGML_LIB_DIR names the directory. Never run by the tests or CI
# (the CI runs build/bench/bench_qmatmul --quick, which says "n/a" without
# the peer). BUILD_DIR selects the build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
venv="${BENCH_VENV:-$root/.bench-venv}"
install=0
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --install-peer) install=1 ;;
    --venv) [ $# -ge 2 ] || { echo "bench-qmatmul: --venv needs a directory" >&2; exit 2; }
            venv="$2"; shift ;;
    *) args+=("$1") ;;
  esac
  shift
done

if [ "$install" = 1 ]; then
  # Debian's numpy satisfies the package's numpy requirement; the pin keeps
  # the peer (and the ABI bench/ggml_peer.c restates) fixed.
  [ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
  echo "bench-qmatmul: installing llama-cpp-python==0.3.36 into $venv (compiles llama.cpp; long)"
  "$venv/bin/pip" install --disable-pip-version-check "llama-cpp-python==0.3.36"
fi

libdir="${WICK_GGML_LIB_DIR:-}"
if [ -z "$libdir" ]; then
  for d in "$venv"/lib/python3*/site-packages/llama_cpp/lib; do
    [ -e "$d/libggml-cpu.so" ] && libdir="$d"
  done
fi
if [ -z "$libdir" ]; then
  echo "bench-qmatmul: no ggml libraries under $venv (run with --install-peer); ggml columns will say n/a" >&2
fi

dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" --target bench_qmatmul -j"$(nproc)"
if [ -n "$libdir" ]; then
  exec "$dir/bench/bench_qmatmul" --ggml-lib "$libdir" ${args[@]+"${args[@]}"}
fi
exec "$dir/bench/bench_qmatmul" ${args[@]+"${args[@]}"}
