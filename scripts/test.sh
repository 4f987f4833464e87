#!/usr/bin/env bash
# Build and run every test. `--sanitize` builds into build-asan with
# AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer included),
# the libFuzzer targets too, and runs every test but the model-level ones
# (label `model`: the real SmolLM2 / MiniLM end to end), which the plain
# run covers: CI runs both, so each test runs once where it tells most.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ccache-env.sh
. scripts/ccache-env.sh
dir=build
ctest_args=()
args=(-DCMAKE_BUILD_TYPE=Release "${WICK_CCACHE_ARGS[@]}")
# WICK_CUDA_ARCHS narrows the CUDA architectures the kernels are compiled
# for (default: CMakeLists.txt's 80/86/89/90); CI sets one, see .ci/run
[ -n "${WICK_CUDA_ARCHS:-}" ] && args+=("-DCMAKE_CUDA_ARCHITECTURES=$WICK_CUDA_ARCHS")
if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  # -O1, as the sanitizers' docs advise: -O0 made the real-model tests
  # (SmolLM2, MiniLM) the slowest part of CI while finding nothing more
  # CUDA off: no GPU runs its host code here (the dry runs stand the CPU
  # in), and nvcc compiling every kernel a second time cost CI minutes
  # the Python package too: its tests preload clang's shared ASan runtime into
  # the interpreter (python/CMakeLists.txt)
  # the fuzz targets (fuzz/) link this build's library: no second
  # sanitized build of wick just for them; the benchmarks are not built
  # (timings under ASan mean nothing; the Release build runs them)
  args=(-DCMAKE_BUILD_TYPE=Debug -DWICK_SANITIZE=ON -DCMAKE_C_COMPILER=clang "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DWICK_CUDA=OFF
        -DWICK_FUZZ=ON -DWICK_BUILD_BENCH=OFF "${WICK_CCACHE_ARGS[@]}")
  ctest_args=(-LE '^model$')
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
# CI keeps the build warning-free with both compilers (gcc here, clang in --sanitize)
[ "${CI:-}" = "true" ] && args+=(-DWICK_WERROR=ON)
cmake -S . -B "$dir" "${args[@]}" >/dev/null
cmake --build "$dir" -j"$(nproc)"
cd "$dir"
ctest --output-on-failure -j2 "${ctest_args[@]}"
