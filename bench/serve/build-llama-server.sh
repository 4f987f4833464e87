#!/usr/bin/env bash
# Builds llama.cpp's llama-server (the peer for bench/serve) from the
# llama-cpp-python 0.3.36 sdist that scripts/setup.sh pins. By hand only,
# never in CI: it takes many minutes on a small machine.
#
#   bench/serve/build-llama-server.sh [BUILD_DIR]
#
# Sources: $LLAMA_SDIST_DIR (an unpacked llama_cpp_python-0.3.36 folder) if
# set, else /work/peers/llama-sdist/llama_cpp_python-0.3.36 when present,
# else the tarball is downloaded (url from PyPI's simple index, sha256 checked)
# and unpacked under .cache/llama-sdist. The binary ends up at
# BUILD_DIR/bin/llama-server (default .cache/llama-server/bin/llama-server);
# bench/serve/run.py looks there (or at $LLAMA_SERVER).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/.cache/llama-server}"
sdist_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
jobs="${JOBS:-2}"

src=""
for d in "${LLAMA_SDIST_DIR:-}" /work/peers/llama-sdist/llama_cpp_python-0.3.36 \
         "$root/.cache/llama-sdist/llama_cpp_python-0.3.36"; do
  if [ -n "$d" ] && [ -f "$d/vendor/llama.cpp/CMakeLists.txt" ]; then src="$d"; break; fi
done
if [ -z "$src" ]; then
  mkdir -p "$root/.cache/llama-sdist"
  tgz="$root/.cache/llama-sdist/llama_cpp_python-0.3.36.tar.gz"
  if [ ! -f "$tgz" ]; then
    url="$(curl -fsS https://pypi.org/simple/llama-cpp-python/ |
           grep -o 'https://files.pythonhosted.org/[^"#]*/llama_cpp_python-0.3.36.tar.gz' | head -n 1)"
    curl -fsS -o "$tgz.part" "$url"
    mv "$tgz.part" "$tgz"
  fi
  echo "$sdist_sha  $tgz" | sha256sum -c --quiet - \
    || { echo "build-llama-server: sdist checksum mismatch" >&2; exit 1; }
  tar -xzf "$tgz" -C "$root/.cache/llama-sdist"
  src="$root/.cache/llama-sdist/llama_cpp_python-0.3.36"
fi
llama="$src/vendor/llama.cpp"

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# Tools must be on (the server lives in tools/server); only the llama-server
# target is built. No curl / OpenSSL (loopback only), no web UI download.
nice -n 10 cmake -S "$llama" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF "${launcher[@]}"
nice -n 10 cmake --build "$build" --target llama-server -j "$jobs"
echo "build-llama-server: $build/bin/llama-server"
