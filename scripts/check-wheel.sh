#!/usr/bin/env bash
# Packaging check of the Python package (issue 14): builds the sdist from
# this checkout, then the wheel FROM THAT SDIST, as `python -m build` does
# and as a user's pip does with an sdist (PEP 517, build isolation:
# scikit-build-core==0.10.7 comes from PyPI), so one build shows both that
# the sdist builds and that its wheel works; installs the wheel into a
# FRESH virtual environment without system site packages (no numpy, no
# torch) and smoke-tests it from a directory outside the repository.
# WICK_WHEEL_SDIST_INSTALL=1 also pip-installs the sdist itself into a
# second fresh venv (a second build; CI leaves it out for time).
#
#   scripts/check-wheel.sh            # everything in a temp dir, removed after
#   scripts/check-wheel.sh --keep     # keep the temp dir (wheel, sdist, venvs)
#
# Env: PYTHON (default /usr/bin/python3: the Python the wheel is for; it needs
# its venv module and headers: python3-venv, python3-dev),
# CMAKE_BUILD_PARALLEL_LEVEL (default 2), WICK_WHEEL_CCACHE=0 to build
# without ccache even when it is installed.
# Exit status 0 only when every install imports and passes the smoke test.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=${PYTHON:-/usr/bin/python3}
KEEP=0
[[ "${1:-}" == "--keep" ]] && KEEP=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
# build (the PEP 517 front end for the sdist), pinned; it lives in a
# throwaway venv, never in the project's
BUILD_PIN="build==1.2.2.post1"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/wick-wheel.XXXXXX")
cleanup() { if [[ $KEEP == 1 ]]; then echo "check-wheel: kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
DIST=$TMP/dist
mkdir -p "$DIST"

step() { echo "== check-wheel: $*"; }
now() { date +%s; }

# The CPU-only build (pyproject.toml sets WICK_CUDA=OFF too; given here as
# well so that a changed default there cannot slip a CUDA wheel through).
CFG=(--config-settings=cmake.define.WICK_CUDA=OFF)
if [[ "${WICK_WHEEL_CCACHE:-1}" != 0 ]] && command -v ccache >/dev/null; then
  # paths relative to /: the sdist's unpacked copy hits what the wheel's
  # build (and build/, same flags) compiled (scripts/ccache-env.sh)
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-/}"
  CFG+=(--config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
fi

step "tools venv ($($PYTHON --version), $BUILD_PIN)"
"$PYTHON" -m venv "$TMP/tools"
"$TMP/tools/bin/python" -m pip install -q "$BUILD_PIN"

step "sdist"
t0=$(now)
"$TMP/tools/bin/python" -m build --sdist --outdir "$DIST" "$ROOT" >"$TMP/sdist.log" 2>&1 ||
  { tail -40 "$TMP/sdist.log"; exit 1; }
SDIST=$(ls "$DIST"/wick-*.tar.gz)
echo "sdist: $(basename "$SDIST"), $(du -k "$SDIST" | cut -f1) KiB, $(tar tzf "$SDIST" | wc -l) files, $(($(now) - t0)) s"
# nothing that is not source: no build trees, venvs, caches, tests or data
if tar tzf "$SDIST" | grep -E '/(build[^/]*|\.venv|\.cache|tests|bench|\.git)/|\.(so|o|a|gguf|safetensors|npy|bin)$'; then
  echo "check-wheel: the sdist holds files it should not (above)" >&2
  exit 1
fi

step "wheel from the sdist (pip wheel, CMAKE_BUILD_PARALLEL_LEVEL=$CMAKE_BUILD_PARALLEL_LEVEL)"
t0=$(now)
"$TMP/tools/bin/python" -m pip wheel "$SDIST" -w "$DIST" --no-deps "${CFG[@]}" >"$TMP/wheel.log" 2>&1 ||
  { tail -60 "$TMP/wheel.log"; exit 1; }
WHEEL_S=$(($(now) - t0))
WHEEL=$(ls "$DIST"/wick-*.whl)
echo "wheel: $(basename "$WHEEL"), $(du -k "$WHEEL" | cut -f1) KiB, built in ${WHEEL_S} s"
"$TMP/tools/bin/python" - "$WHEEL" <<'EOF'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
need = ["wick/__init__.py", "wick/_wick.pyi", "wick/py.typed"]
missing = [n for n in need if n not in names]
if not any(n.startswith("wick/_wick.") and n.endswith(".so") for n in names):
    missing.append("wick/_wick*.so")
if missing:
    sys.exit(f"check-wheel: the wheel lacks {missing}; it has {names}")
print("wheel holds:", ", ".join(n for n in names if not n.startswith("wick-")))
EOF

# The smoke test: runs in a fresh venv, from outside the repository, with
# no numpy. Checks the package is the installed one, creation, an op, a
# matmul, wick's exceptions, the buffer protocol, and that the module links
# no CUDA library.
cat >"$TMP/smoke.py" <<'EOF'
import importlib.util, os, subprocess, sys
import wick

here = os.path.dirname(wick.__file__)
assert here.startswith(sys.prefix), f"imported {here}, not the installed package"
assert importlib.util.find_spec("numpy") is None, "the fresh venv should not see numpy"
a = wick.zeros(2, 3) + wick.ones(2, 3, dtype="f32") * 2
assert a.shape == (2, 3) and a.dtype is wick.f32 and a.tolist() == [[2.0] * 3] * 2, a
m = wick.tensor([[1.0, 2.0], [3.0, 4.0]]) @ wick.eye(2)
assert m.tolist() == [[1.0, 2.0], [3.0, 4.0]], m
assert (wick.arange(4) * 2).tolist() == [0, 2, 4, 6]
try:
    wick.zeros(2, 3) + wick.zeros(4)
except wick.ShapeError as e:
    assert isinstance(e, ValueError) and isinstance(e, wick.Error) and str(e), e
else:
    raise AssertionError("broadcasting (2,3) with (4,) did not raise wick.ShapeError")
mv = memoryview(a)
assert mv.format == "f" and mv.shape == (2, 3) and mv.tolist() == a.tolist()
so = [f for f in os.listdir(here) if f.startswith("_wick.") and f.endswith(".so")]
assert len(so) == 1, so
ldd = subprocess.run(["ldd", os.path.join(here, so[0])], capture_output=True, text=True).stdout
assert "libcu" not in ldd, f"the module links CUDA:\n{ldd}"
for f in ("_wick.pyi", "py.typed"):
    assert os.path.exists(os.path.join(here, f)), f"{f} not installed"
print(f"smoke ok: wick {wick.__version__} from {here} ({wick.cpu_isa()})")
EOF

smoke() { # venv-name, what to pip install (+ pip options)
  local v=$TMP/$1
  shift
  "$PYTHON" -m venv "$v"
  "$v/bin/python" -c "import sys; assert sys.prefix != sys.base_prefix"
  "$v/bin/python" -m pip install -q "$@" >"$v.log" 2>&1 || { tail -60 "$v.log"; exit 1; }
  (cd "$TMP" && "$v/bin/python" "$TMP/smoke.py")
}

step "install the wheel into a fresh venv"
smoke venv-wheel --no-index "$WHEEL"

if [[ "${WICK_WHEEL_SDIST_INSTALL:-0}" == 1 ]]; then
  step "install the sdist into a fresh venv (pip builds it)"
  t0=$(now)
  # the config settings reach the sdist's build too (ccache, CUDA off)
  smoke venv-sdist "${CFG[@]}" "$SDIST"
  echo "sdist install: $(($(now) - t0)) s"
fi

step "ok: wheel $(du -k "$WHEEL" | cut -f1) KiB (built in ${WHEEL_S} s), sdist $(du -k "$SDIST" | cut -f1) KiB"
