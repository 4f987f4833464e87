#!/usr/bin/env bash
# The CUDA backend's device check, for a machine WITH an NVIDIA GPU (compute
# capability 8.0+; driver for CUDA 13): builds wick with the CUDA backend
# (Release, -DWICK_CUDA=ON, benchmarks off), runs the CUDA tests
# (ctest -R cuda, plus the backend contract test) and prints one table: one
# row per test case of tests/test_cuda.c, then the totals. A device test that
# SKIPS here counts as a failure (on this machine the GPU must open).
# Bounded: build 300 s, tests 120 s; the whole run stays under 8 minutes.
#   scripts/device-check.sh                  build into ./build-cuda
#   BUILD_DIR=/tmp/x JOBS=8 scripts/device-check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-$(nproc)}
t0=$(date +%s)
mkdir -p "$dir"
log="$dir/device-check.log"
: >"$log"
gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu" ] || gpu="(nvidia-smi not available)"
fail=0
row() { printf '%-44s %-10s %s\n' "$1" "$2" "${3:-}"; }

echo "== configure + build" >>"$log"
tb=$(date +%s)
if timeout 300 cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON -DWICK_BUILD_BENCH=OFF >>"$log" 2>&1 &&
   timeout 300 cmake --build "$dir" -j"$jobs" >>"$log" 2>&1; then
  build="ok"
else
  build="FAILED"
  fail=1
fi
tbuild=$(( $(date +%s) - tb ))

declare -a names results
tt=$(date +%s)
ctest_res="not run"
if [ "$build" = ok ]; then
  echo "== test_cuda" >>"$log"
  out=$(cd "$dir" && timeout 120 ./tests/test_cuda 2>&1)
  rc=$?
  printf '%s\n' "$out" >>"$log"
  while IFS= read -r line; do
    case "$line" in
      "[       OK ] "*) names+=("${line#\[       OK \] }"); results+=("ok") ;;
      "[  FAILED  ] "*" test(s)"*|"[  SKIPPED ] "*" test(s)"*) ;;
      "[  FAILED  ] "*) n="${line#\[  FAILED  \] }"
        # cmocka lists failures twice (at the case and in the summary)
        dup=0; for i in "${!names[@]}"; do [ "${names[$i]}" = "$n" ] && dup=1; done
        [ $dup = 0 ] && { names+=("$n"); results+=("FAILED"); } ;;
      "[  SKIPPED ] "*) n="${line#\[  SKIPPED \] }"
        dup=0; for i in "${!names[@]}"; do [ "${names[$i]}" = "$n" ] && dup=1; done
        [ $dup = 0 ] && { names+=("$n"); results+=("SKIPPED"); } ;;
    esac
  done <<<"$out"
  [ $rc -eq 0 ] || fail=1
  echo "== ctest -R 'cuda|backend_contract'" >>"$log"
  if (cd "$dir" && timeout 120 ctest -R 'cuda|backend_contract' --output-on-failure) >>"$log" 2>&1; then
    ctest_res="passed"
  else
    ctest_res="FAILED"
    fail=1
  fi
fi
ttest=$(( $(date +%s) - tt ))

echo
echo "wick CUDA device check - $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "GPU: $gpu"
echo
row "check" "result" "note"
row "--------------------------------------------" "----------" "----"
row "configure + build (-DWICK_CUDA=ON)" "$build" "${tbuild} s, -j$jobs"
why=$(printf '%s\n' "${out:-}" | grep -m1 -E '^(note: wk_cuda\(0\)|skipped \(no CUDA device\))' || true)
[ -n "$why" ] && row "wk_cuda(0)" "NO DEVICE" "$why"
for i in "${!names[@]}"; do
  r=${results[$i]}
  if [ "$r" = SKIPPED ]; then
    fail=1
    r="SKIPPED"
    note="device did not open (see $log)"
  else
    note=""
  fi
  [ "$r" = FAILED ] && fail=1
  row "test_cuda: ${names[$i]}" "$r" "$note"
done
row "ctest -R 'cuda|backend_contract'" "$ctest_res" "${ttest} s"
row "total" "$([ $fail = 0 ] && echo ok || echo FAILED)" "$(( $(date +%s) - t0 )) s; log: $log"
exit $fail
