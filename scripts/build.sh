#!/usr/bin/env bash
# Configure and build wick (Release) into ./build. Extra args go to cmake, e.g.
# -DWICK_BLAS=openblas (or blis) to run f32/f64 matmul on a system BLAS.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/ccache-env.sh
. scripts/ccache-env.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${WICK_CCACHE_ARGS[@]}" "$@" >/dev/null
cmake --build build -j"$(nproc)"
