# shellcheck shell=bash disable=SC2034
# Sourced by the build scripts: compile through ccache when it is installed
# (scripts/setup.sh installs it), so that two builds of the same sources
# with the same flags compile them once -- build/ and the system-BLAS
# build, the wheel and the sdist in scripts/check-wheel.sh. CCACHE_BASEDIR=/
# makes every path relative, so a copy of the tree in another folder (an
# unpacked sdist, a fresh clone) hits the same entries. WICK_CCACHE=0 turns
# it off.
WICK_CCACHE_ARGS=()
if [ "${WICK_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-/}"
  WICK_CCACHE_ARGS=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
