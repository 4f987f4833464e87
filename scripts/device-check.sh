#!/usr/bin/env bash
# The CUDA backend's device check: the ONE command of a session on a machine
# WITH an NVIDIA GPU (compute capability 8.0+, driver for CUDA 13; written
# for the H200 device machine: 16 cores, no network, nvcc, CMake, ninja,
# python3 with PyTorch + numpy, no cmocka). It
#   1. makes cmocka available: the system's, else the .debs that
#      scripts/device-prep.sh downloaded into .devdeps/ (unpacked with
#      dpkg -x, or ar + tar, into /tmp/devdeps; CMOCKA_LIB/CMOCKA_INCLUDE
#      point at them, LD_LIBRARY_PATH too);
#   2. configures + builds Release with -DWICK_CUDA=ON and
#      -DCMAKE_CUDA_ARCHITECTURES=90 (only the H200's: a faster build), ninja
#      when present, -j16;
#   3. runs tests/test_cuda and tests/test_cuda_ops (one row per test case),
#      tests/test_backend_ops (every op of the op table tests/oracle/op_table.def,
#      each declared dtype and layout, cuda:0 against the CPU), the emulation tests
#      rebuilt with -DGPU_MODE (the same checks with the real kernels on the
#      GPU against the CPU backend), the CUDA host-emulation tests (ctest -R emu), the other CUDA tests and the backend contract
#      (ctest -R 'cuda|backend_contract'), the oracle suite with its inputs on
#      the GPU (WICK_ORACLE_DEVICE=cuda ctest -R oracle);
#   4. runs bench/bench_gpu (full size) beside PyTorch on the same GPU;
#   5. prints ONE table: build, each test group, each benchmark row with
#      wick, torch, wick's speed-up over torch, the goal and whether it is met.
# Budgets (each step under `timeout`): build 240 s, tests 120 s, bench 120 s;
# the whole run stays under 8 minutes. The full log goes to
# <build dir>/device-check.log (its path is printed at the end). Exit status
# non-zero on any failure: build, a failed or SKIPPED device test (on this
# machine the GPU must open), a failed ctest group, bench_gpu failing or
# finding no device. Benchmark goals missed are reported, not failures.
#
#   scripts/device-check.sh                     build into ./build-cuda
#   BUILD_DIR=/tmp/x JOBS=8 CUDA_ARCH=80 PYTHON=/opt/py/bin/python3 scripts/device-check.sh
#   BENCH_ARGS=--quick scripts/device-check.sh  (a shorter benchmark)
#   DEVDEPS=1 scripts/device-check.sh           (cmocka from .devdeps even if the system has one)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
dir=${BUILD_DIR:-build-cuda}
jobs=${JOBS:-16}
arch=${CUDA_ARCH:-90}
t_build=${T_BUILD:-240}
t_tests=${T_TESTS:-120}
t_bench=${T_BENCH:-120}
t0=$(date +%s)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
log="$dir/device-check.log"
: >"$log"
fail=0
say() { printf '%s\n' "$*" >>"$log"; }
elapsed() { echo $(( $(date +%s) - $1 )); }

# ---- table rows, printed at the end
declare -a T_NAME T_RES T_WICK T_TORCH T_X T_GOAL T_NOTE
trow() { # name result [wick torch x goal note]
  T_NAME+=("$1"); T_RES+=("$2"); T_WICK+=("${3:-}"); T_TORCH+=("${4:-}"); T_X+=("${5:-}"); T_GOAL+=("${6:-}")
  T_NOTE+=("${7:-}")
}

gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
[ -n "$gpu" ] || gpu="(nvidia-smi not available)"
say "== $(date -u '+%Y-%m-%d %H:%M:%S UTC') GPU: $gpu"

# ---- 1. cmocka
cm_args=()
cm_note=""
have_system_cmocka() {
  for d in /usr/include /usr/local/include; do [ -f "$d/cmocka.h" ] && return 0; done
  return 1
}
unpack_deb() { # deb destdir
  if command -v dpkg-deb >/dev/null 2>&1; then
    dpkg-deb -x "$1" "$2"
  else # no dpkg: a .deb is an ar archive holding data.tar.{xz,zst,gz}
    local tmp
    tmp=$(mktemp -d) || return 1
    (cd "$tmp" && ar x "$(readlink -f "$1")") || { rm -rf "$tmp"; return 1; }
    local data
    data=$(ls "$tmp"/data.tar.* 2>/dev/null | head -n 1)
    [ -n "$data" ] && tar -xf "$data" -C "$2"
    local rc=$?
    rm -rf "$tmp"
    return $rc
  fi
}
if [ "${DEVDEPS:-0}" != 1 ] && have_system_cmocka; then
  cm_note="system cmocka"
elif ls .devdeps/libcmocka*.deb >/dev/null 2>&1; then
  dd=/tmp/devdeps
  mkdir -p "$dd"
  ok=1
  for deb in .devdeps/libcmocka*.deb; do unpack_deb "$deb" "$dd" >>"$log" 2>&1 || ok=0; done
  lib=$(find "$dd" -name 'libcmocka.so' 2>/dev/null | head -n 1)
  [ -n "$lib" ] || lib=$(find "$dd" -name 'libcmocka.so.*' 2>/dev/null | sort | head -n 1)
  inc=$(dirname "$(find "$dd" -name cmocka.h 2>/dev/null | head -n 1)" 2>/dev/null)
  if [ $ok = 1 ] && [ -n "$lib" ] && [ -f "$inc/cmocka.h" ]; then
    cm_args=(-DCMOCKA_LIB="$lib" -DCMOCKA_INCLUDE="$inc")
    LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export LD_LIBRARY_PATH
    cm_note="from .devdeps ($lib)"
  else
    cm_note="unpacking .devdeps failed"
  fi
else
  cm_note="no cmocka: run scripts/device-prep.sh on a machine with apt, and carry .devdeps"
fi
tests_on=ON
case "$cm_note" in
  "system cmocka"|from*) trow "cmocka" "ok" "" "" "" "" "$cm_note" ;;
  *) trow "cmocka" "FAILED" "" "" "" "" "$cm_note (tests not built)"; tests_on=OFF; fail=1 ;;
esac
say "== cmocka: $cm_note"

# ---- python: one with numpy (+ torch) for the oracle generators and the peer
# prints "cuda|cpu <torch version>" for a python with numpy and torch
py_probe() {
  timeout 60 "$1" -c 'import numpy, torch; print("cuda" if torch.cuda.is_available() else "cpu", torch.__version__)' \
    2>/dev/null | tail -n 1
}
python=""
py_kind=""
pyver="no torch"
seen=" "
for p in ${PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3 python; do
  pp=$(command -v "$p" 2>/dev/null) || continue
  pp=$(readlink -f "$pp")
  case "$seen" in *" $pp "*) continue ;; esac
  seen="$seen$pp "
  k=$(py_probe "$p")
  if [ "${k%% *}" = cuda ]; then python=$p; py_kind=cuda; pyver="torch ${k#* }"; break; fi
  if [ -n "$k" ] && [ -z "$python" ]; then python=$p; py_kind="torch without CUDA"; pyver="torch ${k#* }"; fi
done
if [ -z "$python" ]; then
  for p in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && timeout 30 "$p" -c 'import numpy' 2>/dev/null; then python=$p; py_kind="numpy only"; break; fi
  done
fi
[ -n "$python" ] || { python=python3; py_kind="no numpy/torch"; }
say "== python: $python ($py_kind, $pyver)"

# ---- 2. configure + build
say "== configure + build"
tb=$(date +%s)
gen=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
build="FAILED"
if timeout "$t_build" cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
     -DCMAKE_CUDA_ARCHITECTURES="$arch" -DWICK_BUILD_BENCH=ON -DWICK_BUILD_TESTS="$tests_on" \
     -DWICK_PYTHON="$(command -v "$python" || echo "$python")" "${cm_args[@]}" >>"$log" 2>&1; then
  left=$(( t_build - $(elapsed "$tb") ))
  [ $left -gt 10 ] || left=10
  # meanwhile, the emulation tests as GPU programs (-DGPU_MODE: the same
  # checks, the real kernels on the device), compiled beside the main build
  mkdir -p "$dir/gpumode"
  gm_pids=()
  for src in tests/cuda/test_*_emu.cu; do
    grep -q GPU_MODE "$src" || continue
    n=$(basename "$src" .cu)
    timeout "$left" nvcc -std=c++17 -O1 -arch=sm_"$arch" -DGPU_MODE -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE -Iinclude -Isrc \
      -c "$src" -o "$dir/gpumode/$n.o" >"$dir/gpumode/$n.log" 2>&1 &
    gm_pids+=($!)
  done
  if timeout "$left" cmake --build "$dir" -j"$jobs" >>"$log" 2>&1; then
    build="ok"
  fi
fi
tbuild=$(elapsed "$tb")
[ "$build" = ok ] || fail=1
trow "configure + build (-DWICK_CUDA=ON, sm_$arch)" "$build" "" "" "" "" "${tbuild} s, -j$jobs$([ "$build" = ok ] || echo "; see the log")"

# ---- 3. tests
tt=$(date +%s)
tests_left() { local l=$(( t_tests - $(elapsed "$tt") )); [ $l -gt 5 ] || l=5; echo $l; }
# One ctest group -> a table row. $1 row name, rest: ctest args. A SKIPPED
# test fails the group: on this machine the GPU must open.
ctest_group() {
  local name=$1
  shift
  local out rc
  say "== ctest $*"
  out=$(cd "$dir" && timeout "$(tests_left)" ctest -j"$jobs" --timeout 100 --output-on-failure "$@" 2>&1)
  rc=$?
  printf '%s\n' "$out" >>"$log"
  local failed_names summary nskip
  failed_names=$(printf '%s\n' "$out" | sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \((.*)\)$/\1 (\2)/p' | tr '\n' ' ')
  nskip=$(printf '%s\n' "$out" | grep -cE '^[[:space:]]*[0-9]+ - [^ ]+ \(Skipped\)$')
  if printf '%s\n' "$out" | grep -q 'No tests were found'; then
    trow "$name" "none" "" "" "" "" "no test matched"
    return 0
  fi
  summary=$(printf '%s\n' "$out" | grep -E 'tests passed' | tail -n 1)
  [ "$nskip" -gt 0 ] && summary="$summary; $nskip SKIPPED (device did not open?)"
  if [ $rc -eq 0 ] && [ "$nskip" -eq 0 ]; then
    trow "$name" "ok" "" "" "" "" "${summary:-passed}"
  else
    [ $rc -eq 124 ] && failed_names="TIMED OUT; $failed_names"
    trow "$name" "FAILED" "" "" "" "" "${summary:-exit $rc}: ${failed_names}"
    fail=1
  fi
}
out=""
if [ "$build" = ok ] && [ "$tests_on" = ON ]; then
  # one row per cmocka case of a GPU test program; a SKIPPED case fails (on
  # this machine the GPU must open), except those that need a second GPU
  cmocka_rows() { # program
    local prog=$1 out rc line n r note
    say "== $prog"
    out=$(cd "$dir" && timeout "$(tests_left)" "./tests/$prog" 2>&1)
    rc=$?
    printf '%s\n' "$out" >>"$log"
    local -a names=() results=()
    while IFS= read -r line; do
      case "$line" in
        "[       OK ] "*) names+=("${line#\[       OK \] }"); results+=("ok") ;;
        "[  FAILED  ] "*" test(s)"*|"[  SKIPPED ] "*" test(s)"*) ;;
        "[  FAILED  ] "*|"[  SKIPPED ] "*)
          n="${line#\[  FAILED  \] }"; n="${n#\[  SKIPPED \] }"
          r=FAILED; case "$line" in "[  SKIPPED ] "*) r=SKIPPED ;; esac
          # cmocka lists failures twice (at the case and in the summary)
          local dup=0 i
          for i in "${!names[@]}"; do [ "${names[$i]}" = "$n" ] && dup=1; done
          [ $dup = 0 ] && { names+=("$n"); results+=("$r"); } ;;
      esac
    done <<<"$out"
    local why
    why=$(printf '%s\n' "$out" | grep -m1 -E '^(note: wk_cuda\(0\)|skipped \(no CUDA device\))' || true)
    [ -n "$why" ] && trow "wk_cuda(0) ($prog)" "NO DEVICE" "" "" "" "" "$why"
    local i
    for i in "${!names[@]}"; do
      r=${results[$i]}; note=""
      if [ "$r" = SKIPPED ]; then
        case "${names[$i]}" in
          *two_devices*) r="skipped"; note="one GPU on this machine" ;;
          *) note="device did not open (see the log)"; fail=1 ;;
        esac
      elif [ "$r" != ok ]; then
        fail=1
      fi
      trow "$prog: ${names[$i]}" "$r" "" "" "" "" "$note"
    done
    if [ $rc -ne 0 ]; then
      fail=1
      [ ${#names[@]} -eq 0 ] && trow "$prog" "FAILED" "" "" "" "" "exit $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
    fi
  }
  cmocka_rows test_cuda
  cmocka_rows test_cuda_ops
  cmocka_rows test_backend_ops   # the op table (tests/oracle/op_table.def): every op, cuda:0 vs the CPU
  # the kernels on the GPU against the CPU backend (GPU_MODE builds)
  for pid in "${gm_pids[@]}"; do wait "$pid"; done
  for o in "$dir"/gpumode/*.o; do
    [ -f "$o" ] || continue
    n=$(basename "$o" .o)
    say "== GPU_MODE $n"
    if ! g++ "$o" "$dir/libwick.a" -L"$(dirname "$(command -v nvcc)")/../lib64" -lcudart_static -lcublas -lcublasLt \
         -lz -lm -lpthread -ldl -lrt -o "$dir/gpumode/$n" >>"$dir/gpumode/$n.log" 2>&1; then
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "link failed: $dir/gpumode/$n.log"
      fail=1
      continue
    fi
    gout=$(timeout 60 "$dir/gpumode/$n" 2>&1)
    grc=$?
    printf '%s\n' "$gout" >>"$log"
    last=$(printf '%s\n' "$gout" | grep -E 'total|skipped' | tail -n 1)
    if [ $grc -eq 0 ] && ! printf '%s\n' "$gout" | grep -q 'No CUDA device\|no CUDA device'; then
      trow "kernels on the GPU: $n" "ok" "" "" "" "" "$last"
    else
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "exit $grc: ${last:-see the log}"
      fail=1
    fi
  done
  ctest_group "CUDA host-emulation tests (ctest -R emu)" -R 'emu'
  ctest_group "ctest -R 'cuda|backend_contract' (the rest)" -R 'cuda|backend_contract' -E '^test_cuda(_ops)?$|^test_backend_ops$|emu|oracle'
  # the oracle suite on the CPU (test_oracle*) and on the GPU (oracle_cuda*:
  # the same programs with WICK_ORACLE_DEVICE=cuda:0, set by tests/CMakeLists.txt)
  ctest_group "oracle suite, CPU + GPU (ctest -R oracle)" -R 'oracle'
  ncu=$(grep -cE 'Test +#[0-9]+: oracle_cuda[^ ]* \.+ +Passed' "$log")
  ncu_all=$(grep -cE 'Test +#[0-9]+: oracle_cuda[^ ]* \.+' "$log")
  T_NOTE[${#T_NOTE[@]}-1]="oracle_cuda* on the GPU: $ncu of $ncu_all passed; ${T_NOTE[${#T_NOTE[@]}-1]}"
else
  trow "tests" "not run" "" "" "" "" "$([ "$build" = ok ] && echo 'no cmocka' || echo 'build failed')"
fi
ttest=$(elapsed "$tt")

# ---- 4. bench_gpu
jget() { # key line -> the value (string without quotes, number, or null)
  sed -nE "s/.*\"$1\":(\"([^\"]*)\"|([^,}]*)).*/\2\3/p" <<<"$2"
}
fmtnum() {
  case "$1" in ""|null) echo "n/a" ;; *) LC_ALL=C printf '%.4g' "$1" ;; esac
}
tbn=$(date +%s)
bench_note=""
hdr=""
if [ "$build" = ok ] && [ -x "$dir/bench/bench_gpu" ]; then
  say "== bench_gpu --json ${BENCH_ARGS:-} --python $python"
  bout=$(cd "$dir" && timeout "$t_bench" ./bench/bench_gpu --json ${BENCH_ARGS:-} --python "$python" 2>>"$log")
  brc=$?
  printf '%s\n' "$bout" >"$dir/bench_gpu.jsonl"
  printf '%s\n' "$bout" >>"$log"
  if printf '%s\n' "$bout" | grep -q '^bench_gpu: no CUDA device'; then
    trow "bench_gpu" "NO DEVICE" "" "" "" "" "$(printf '%s\n' "$bout" | grep -m1 '^bench_gpu: no CUDA device' | cut -c1-160)"
    fail=1
  else
    hdr=$(printf '%s\n' "$bout" | grep -m1 '^{"bench":"gpu"')
    bench_note="torch $(jget torch "$hdr"); $(elapsed "$tbn") s"
    if [ $brc -eq 0 ]; then
      trow "bench_gpu (exit status)" "ok" "" "" "" "" "$bench_note"
    else
      trow "bench_gpu (exit status)" "FAILED" "" "" "" "" "exit $brc$([ $brc -eq 124 ] && echo ' (timed out)'); wrong results or failed ops: see the log"
      fail=1
    fi
    while IFS= read -r line; do
      case "$line" in '{"row":'*) ;; *) continue ;; esac
      name="$(jget row "$line") [$(jget unit "$line")]"
      met=$(jget met "$line")
      w=$(fmtnum "$(jget wick "$line")")
      tv=$(fmtnum "$(jget torch "$line")")
      x=$(jget speedup "$line"); x=$([ "$x" = null ] || [ -z "$x" ] && echo "-" || LC_ALL=C printf '%.2f' "$x")
      err=$(jget error "$line")
      trow "$name" "$met" "$w" "$tv" "$x" "$(jget goal "$line")" "${err:+n/a (${err:0:90})}"
    done <<<"$bout"
  fi
else
  trow "bench_gpu" "not run" "" "" "" "" "build failed"
fi

# ---- 5. the table
total=$(elapsed "$t0")
{
  echo
  echo "wick CUDA device check - $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "GPU: $gpu"
  [ -n "$hdr" ] && echo "bench_gpu ran on: $(jget device "$hdr")"
  echo "python: $python ($py_kind; $pyver)   build ${tbuild} s, tests ${ttest} s, total ${total} s"
  echo "x torch: wick's speed-up over PyTorch (> 1: wick faster); result of a benchmark row: its goal met (yes/NO), - no goal"
  echo
  printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "check" "result" "wick" "torch" "x torch" "goal" "note"
  printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "----------------------------------------------------" "---------" \
    "----------" "----------" "-------" "----------------" "----"
  for i in "${!T_NAME[@]}"; do
    printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "${T_NAME[$i]:0:52}" "${T_RES[$i]}" "${T_WICK[$i]}" "${T_TORCH[$i]}" \
      "${T_X[$i]}" "${T_GOAL[$i]}" "${T_NOTE[$i]}"
  done
  printf '%-52s %-9s %s\n' "total" "$([ $fail = 0 ] && echo ok || echo FAILED)" "${total} s; log: $log"
} | tee -a "$log"
exit $fail
