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
#      (ctest -R 'cuda|backend_contract|^test_mpi_collectives$': NCCL), the oracle suite with its inputs on
#      the GPU (WICK_ORACLE_DEVICE=cuda ctest -R oracle);
#   4. runs bench/bench_gpu (full size) beside PyTorch on the same GPU;
#   5. prints ONE table: build, each test group, each benchmark row with
#      wick, torch, wick's speed-up over torch, the goal and whether it is met.
# Budgets: every stage runs under `timeout` with its OWN budget (seconds,
# each overridable by its variable), so a slow group cannot starve the
# ones after it into "TIMED OUT" rows: T_BUILD=200 (configure + build; the
# GPU_MODE compiles run beside it under what is left of it), T_CUDA=30
# (test_cuda), T_CUDA_OPS=30, T_BACKEND_OPS=40, T_GPUMODE=40 (each GPU_MODE
# program; they run side by side), T_EMU=30, T_REST=30, T_ORACLE=60,
# T_BENCH=90 (its peer alone may take 90): 550 s at worst, and T_TOTAL=560
# caps the sum with the probes (a stage whose budget would run past it gets
# what is left and its row says so; linking the GPU_MODE programs, 30 s
# each at most, takes a few seconds). Each row's note and the header give
# the seconds each stage took.
# GPU_MODE programs: gpumode/ is emptied first, every compile's exit status
# is kept, and each program that did not build (or timed out) gets a FAILED
# row; only a .o its own compile just wrote is linked. They are linked with
# the CUDA libraries CMake found (CMakeCache.txt) and the same -rpath the
# CMake targets get, so they start where ld.so.conf lacks the CUDA libs.
# The full log goes to <build dir>/device-check.log (its path is printed at
# the end). Exit status non-zero on any failure: build, a failed or SKIPPED
# device test (on this machine the GPU must open), a GPU_MODE program that
# did not build, link or pass, a failed ctest group, bench_gpu failing or
# finding no device. Benchmark goals missed are reported, not failures.
#
#   scripts/device-check.sh                     build into ./build-cuda
#   BUILD_DIR=/tmp/x JOBS=8 CUDA_ARCH=80 PYTHON=/opt/py/bin/python3 scripts/device-check.sh
#   BENCH_ARGS=--quick scripts/device-check.sh  (a shorter benchmark)
#   DEVDEPS=1 scripts/device-check.sh           (cmocka from .devdeps even if the system has one)
#   scripts/device-check.sh --dry-run           (no GPU, no build: walks every stage, prints each
#                                                command it would run and the table of the rows
#                                                that would run; default dir build-device-dry)
# In a dry run, DEVICE_CHECK_FAKE="key=rc ..." makes the step `key` end with
# exit status rc (124: timed out), to exercise the failure rows; keys: build,
# compile:<prog>, link:<prog>, run:<prog> (GPU_MODE programs, e.g.
# compile:test_cuda_conv_emu), prog:<test_cuda|test_cuda_ops|test_backend_ops>,
# group:<emu|rest|oracle>, bench. tests/scripts/test_device_check.sh runs it.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
dry=0
for a in "$@"; do
  case "$a" in
    --dry-run) dry=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "device-check: unknown argument '$a' (--dry-run, --help)" >&2; exit 2 ;;
  esac
done
dir=${BUILD_DIR:-$([ $dry = 1 ] && echo build-device-dry || echo build-cuda)}
jobs=${JOBS:-16}
arch=${CUDA_ARCH:-90}
# the budgets (see the header); their sum stays under t_total
t_build=${T_BUILD:-200}
t_cuda=${T_CUDA:-30}
t_cuda_ops=${T_CUDA_OPS:-30}
t_backend_ops=${T_BACKEND_OPS:-40}
t_gpumode=${T_GPUMODE:-40}
t_emu=${T_EMU:-30}
t_rest=${T_REST:-30}
t_oracle=${T_ORACLE:-60}
t_bench=${T_BENCH:-90}
t_total=${T_TOTAL:-560}
t0=$(date +%s)
exec 3>&1 # the script's stdout, for the dry run's lines from inside $(...)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
log="$dir/device-check.log"
: >"$log"
fail=0
say() { printf '%s\n' "$*" >>"$log"; }
elapsed() { echo $(( $(date +%s) - $1 )); }
# budget WANT: B = WANT, or what is left of t_total when that is less (>= 5);
# cut_note says which (a TIMED OUT row of a cut stage is the cap, not the
# code). Globals, not an echo: a command substitution would run budget in a
# subshell and lose cut_note.
B=0
cut_note=""
budget() {
  local left=$(( t_total - $(elapsed "$t0") ))
  [ $left -ge 5 ] || left=5
  if [ "$1" -gt $left ]; then B=$left; cut_note=" (budget cut from $1 s to $left s by T_TOTAL=$t_total)"
  else B=$1; cut_note=""; fi
}
# Stage times, printed in the header: "name N s" each.
declare -a STAGES
stage_done() { STAGES+=("$1 $2 s"); }

# ---- dry run: each step that needs the GPU or the build prints its command
# and ends with the status DEVICE_CHECK_FAKE gives its key (default 0)
fake_rc() { # key -> rc
  local kv
  for kv in ${DEVICE_CHECK_FAKE:-}; do
    [ "${kv%=*}" = "$1" ] && { echo "${kv##*=}"; return; }
  done
  echo 0
}
# step KEY BUDGET CMD...: CMD under `timeout BUDGET`; in a dry run, print it
# and return the faked status instead
step() {
  local key=$1 b=$2
  shift 2
  if [ $dry = 1 ]; then
    printf 'dry-run: [%s, %s s] %s\n' "$key" "$b" "$*" >&3
    printf 'dry-run: [%s, %s s] %s\n' "$key" "$b" "$*" >>"$log"
    return "$(fake_rc "$key")"
  fi
  timeout "$b" "$@"
}
ran() { [ $dry = 1 ] && echo "would run" || echo ok; } # a row's result when nothing failed

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
tcm=$(date +%s)
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
stage_done cmocka "$(elapsed "$tcm")"

# ---- python: one with numpy (+ torch) for the oracle generators and the peer
# prints "cuda|cpu <torch version>" for a python with numpy and torch
py_probe() {
  timeout 30 "$1" -c 'import numpy, torch; print("cuda" if torch.cuda.is_available() else "cpu", torch.__version__)' \
    2>/dev/null | tail -n 1
}
python=""
py_kind=""
pyver="no torch"
seen=" "
tpy=$(date +%s)
[ $dry = 1 ] && python=${PYTHON:-python3} && py_kind="dry run: not probed"
[ $dry = 1 ] || for p in ${PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3 python; do
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
stage_done python "$(elapsed "$tpy")"


# ---- 2. configure + build
say "== configure + build"
tb=$(date +%s)
gen=()
if [ ! -f "$dir/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
build="FAILED"
budget "$t_build"; bb=$B; bnote=$cut_note
# GPU_MODE programs: the emulation tests with the real kernels on the GPU
# (-DGPU_MODE: the same checks against the CPU backend). gpumode/ is emptied
# first so that no .o of an earlier run can be linked; gm_rc keeps each
# compile's exit status (unset: not started).
rm -rf "$dir/gpumode"
mkdir -p "$dir/gpumode"
declare -a gm_names gm_pids gm_rc
for src in tests/cuda/test_*_emu.cu; do
  grep -q GPU_MODE "$src" && gm_names+=("$(basename "$src" .cu)")
done
if step build "$bb" cmake -S . -B "$dir" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DWICK_CUDA=ON \
     -DCMAKE_CUDA_ARCHITECTURES="$arch" -DWICK_BUILD_BENCH=ON -DWICK_BUILD_TESTS="$tests_on" \
     -DWICK_PYTHON="$(command -v "$python" || echo "$python")" "${cm_args[@]}" >>"$log" 2>&1; then
  left=$(( bb - $(elapsed "$tb") ))
  [ $left -gt 10 ] || left=10
  # compiled beside the main build, each under what is left of its budget
  for n in "${gm_names[@]}"; do
    if [ $dry = 1 ]; then
      # the compile faked: its status from DEVICE_CHECK_FAKE, a .o only on success
      ( step "compile:$n" "$left" nvcc -std=c++17 -O1 -arch=sm_"$arch" -DGPU_MODE -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE \
          -Iinclude -Isrc -c "tests/cuda/$n.cu" -o "$dir/gpumode/$n.o" && : >"$dir/gpumode/$n.o" ) \
        >"$dir/gpumode/$n.log" 2>&1 &
    else
      timeout "$left" nvcc -std=c++17 -O1 -arch=sm_"$arch" -DGPU_MODE -DWICK_HAVE_CUDA=1 -D_GNU_SOURCE -Iinclude -Isrc \
        -c "tests/cuda/$n.cu" -o "$dir/gpumode/$n.o" >"$dir/gpumode/$n.log" 2>&1 &
    fi
    gm_pids+=($!)
  done
  if step build "$left" cmake --build "$dir" -j"$jobs" >>"$log" 2>&1; then
    build="ok"
  fi
fi
# every compile's status, whatever became of the build (none left running)
for i in "${!gm_pids[@]}"; do
  wait "${gm_pids[$i]}"
  gm_rc[$i]=$?
done
tbuild=$(elapsed "$tb")
stage_done build "$tbuild"
[ "$build" = ok ] || fail=1
trow "configure + build (-DWICK_CUDA=ON, sm_$arch)" "$([ "$build" = ok ] && ran || echo FAILED)" "" "" "" "" \
  "${tbuild} s of ${bb} s${bnote}, -j$jobs$([ "$build" = ok ] || echo "; see the log")"

# ---- 3. tests, each group under its own budget
tt=$(date +%s)
# One ctest group -> a table row. $1 row name, $2 its key (DEVICE_CHECK_FAKE
# group:<key>), $3 its budget, rest: ctest args. A SKIPPED test fails the
# group: on this machine the GPU must open.
ctest_group() {
  local name=$1 key=$2 b
  budget "$3"
  b=$B
  local cn=$cut_note
  shift 3
  local out rc ts
  ts=$(date +%s)
  say "== ctest $*"
  out=$(cd "$dir" && step "group:$key" "$b" ctest -j"$jobs" --timeout "$b" --output-on-failure "$@" 2>&1)
  rc=$?
  printf '%s\n' "$out" >>"$log"
  local took
  took=$(elapsed "$ts")
  stage_done "ctest $key" "$took"
  local failed_names summary nskip
  failed_names=$(printf '%s\n' "$out" | sed -nE 's/^[[:space:]]*[0-9]+ - ([^ ]+) \((.*)\)$/\1 (\2)/p' | tr '\n' ' ')
  nskip=$(printf '%s\n' "$out" | grep -cE '^[[:space:]]*[0-9]+ - [^ ]+ \(Skipped\)$')
  if printf '%s\n' "$out" | grep -q 'No tests were found'; then
    trow "$name" "none" "" "" "" "" "no test matched"
    return 0
  fi
  summary=$(printf '%s\n' "$out" | grep -E 'tests passed' | tail -n 1)
  [ "$nskip" -gt 0 ] && summary="$summary; $nskip SKIPPED (device did not open?)"
  if [ $dry = 1 ] && [ $rc -eq 0 ]; then
    # what the group holds, where the dry run's build dir has been configured
    local nt=""
    [ -f "$dir/CTestTestfile.cmake" ] && nt=$(cd "$dir" && ctest -N "$@" 2>/dev/null | sed -nE 's/^Total Tests: ([0-9]+)/\1 tests; /p')
    summary="${nt}ctest $*"
  fi
  if [ $rc -eq 0 ] && [ "$nskip" -eq 0 ]; then
    trow "$name" "$(ran)" "" "" "" "" "${took} s of ${b} s${cn}; ${summary:-passed}"
  else
    [ $rc -eq 124 ] && failed_names="TIMED OUT after ${b} s${cn}; $failed_names"
    trow "$name" "FAILED" "" "" "" "" "${took} s; ${summary:-exit $rc}: ${failed_names}"
    fail=1
  fi
}
# One row per cmocka case of a GPU test program; a SKIPPED case fails (on
# this machine the GPU must open), except those that need a second GPU. In
# a dry run the rows are the cases the program's source registers.
cmocka_rows() { # program budget
  local prog=$1 b out rc line n r note ts
  budget "$2"
  b=$B
  local cn=$cut_note
  ts=$(date +%s)
  say "== $prog"
  out=$(cd "$dir" && step "prog:$prog" "$b" "./tests/$prog" 2>&1)
  rc=$?
  printf '%s\n' "$out" >>"$log"
  local -a names=() results=()
  if [ $dry = 1 ]; then
    while IFS= read -r n; do names+=("$n"); results+=("$(ran)"); done < <(
      sed -nE 's/.*cmocka_unit_test[a-z_]*\(([A-Za-z0-9_]+).*/\1/p' "tests/$prog.c")
  fi
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
  local took
  took=$(elapsed "$ts")
  stage_done "$prog" "$took"
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
    elif [ "$r" != ok ] && [ "$r" != "would run" ]; then
      fail=1
    fi
    trow "$prog: ${names[$i]}" "$r" "" "" "" "" "$note"
  done
  if [ $rc -ne 0 ]; then
    fail=1
    trow "$prog" "FAILED" "" "" "" "" "exit $rc$([ $rc -eq 124 ] && echo " (timed out after ${b} s${cn})"), ${took} s"
  else
    trow "$prog (exit status)" "$(ran)" "" "" "" "" "${took} s of ${b} s${cn}"
  fi
}
out=""
if [ "$build" = ok ] && [ "$tests_on" = ON ]; then
  cmocka_rows test_cuda "$t_cuda"
  cmocka_rows test_cuda_ops "$t_cuda_ops"
  cmocka_rows test_backend_ops "$t_backend_ops" # the op table (tests/oracle/op_table.def): every op, cuda:0 vs the CPU

  # ---- the GPU_MODE programs: a FAILED row for each that did not build
  # (its compile's own status), link or pass; the rest run side by side,
  # each under its own budget
  tg=$(date +%s)
  budget "$t_gpumode"; gmb=$B; gmcut=$cut_note
  # the CUDA libraries CMake found and the rpath its targets get (the
  # directory of libcublas.so): without it a GPU_MODE program cannot start
  # on a machine whose ld.so.conf lacks the CUDA libraries
  cvar() { sed -nE "s/^$1:[A-Z]+=(.*)$/\1/p" "$dir/CMakeCache.txt" 2>/dev/null | head -n 1; }
  cu_libdir="$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../lib64"
  cu_cudart=$(cvar CUDA_cudart_static_LIBRARY); cu_cudart=${cu_cudart:-$cu_libdir/libcudart_static.a}
  cu_blas=$(cvar CUDA_cublas_LIBRARY); cu_blas=${cu_blas:-$cu_libdir/libcublas.so}
  cu_blaslt=$(cvar CUDA_cublasLt_LIBRARY); cu_blaslt=${cu_blaslt:-$cu_libdir/libcublasLt.so}
  cu_os=$(cvar CUDA_culibos_LIBRARY)
  cu_rpath=$(dirname "$cu_blas")
  declare -a gm_run=() gm_rpids=()
  for i in "${!gm_names[@]}"; do
    n=${gm_names[$i]}
    rc=${gm_rc[$i]:-}
    if [ -z "$rc" ]; then
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "not compiled"; fail=1; continue
    elif [ "$rc" -eq 124 ]; then
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "compile timed out (the build's budget); $dir/gpumode/$n.log"
      fail=1; continue
    elif [ "$rc" -ne 0 ] || [ ! -f "$dir/gpumode/$n.o" ]; then
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "compile failed (exit $rc): $dir/gpumode/$n.log"
      fail=1; continue
    fi
    say "== GPU_MODE $n"
    if ! step "link:$n" 30 g++ "$dir/gpumode/$n.o" "$dir/libwick.a" "$cu_cudart" ${cu_os:+"$cu_os"} "$cu_blas" "$cu_blaslt" \
         -Wl,-rpath,"$cu_rpath" -lz -lm -lpthread -ldl -lrt -o "$dir/gpumode/$n" >>"$dir/gpumode/$n.log" 2>&1; then
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" "link failed: $dir/gpumode/$n.log"
      fail=1; continue
    fi
    step "run:$n" "$gmb" "$dir/gpumode/$n" >"$dir/gpumode/$n.out" 2>&1 &
    gm_run+=("$n"); gm_rpids+=($!)
  done
  for i in "${!gm_run[@]}"; do
    n=${gm_run[$i]}
    wait "${gm_rpids[$i]}"
    grc=$?
    gout=$(cat "$dir/gpumode/$n.out")
    printf '== GPU_MODE %s\n%s\n' "$n" "$gout" >>"$log"
    last=$(printf '%s\n' "$gout" | grep -E 'total|skipped' | tail -n 1)
    if [ $dry = 1 ] && [ $grc -eq 0 ]; then
      trow "kernels on the GPU: $n" "$(ran)" "" "" "" "" "budget ${gmb} s${gmcut}"
    elif [ $grc -eq 0 ] && ! printf '%s\n' "$gout" | grep -q 'No CUDA device\|no CUDA device'; then
      trow "kernels on the GPU: $n" "ok" "" "" "" "" "$last"
    else
      trow "kernels on the GPU: $n" "FAILED" "" "" "" "" \
        "exit $grc$([ $grc -eq 124 ] && echo " (timed out after ${gmb} s${gmcut})"): ${last:-see the log}"
      fail=1
    fi
  done
  stage_done "GPU_MODE" "$(elapsed "$tg")"
  ctest_group "CUDA host-emulation tests (ctest -R emu)" emu "$t_emu" -R 'emu'
  # (test_mpi_collectives as a singleton: its NCCL section, every collective
  # on a size-1 NCCL communicator, runs here when the build found NCCL)
  ctest_group "ctest -R 'cuda|backend_contract|mpi_collectives' (the rest)" rest "$t_rest" \
    -R 'cuda|backend_contract|^test_mpi_collectives$' \
    -E '^test_cuda(_ops)?$|^test_backend_ops$|emu|oracle'
  # the oracle suite on the CPU (test_oracle*) and on the GPU (oracle_cuda*:
  # the same programs with WICK_ORACLE_DEVICE=cuda:0, set by tests/CMakeLists.txt)
  ctest_group "oracle suite, CPU + GPU (ctest -R oracle)" oracle "$t_oracle" -R 'oracle'
  if [ $dry = 0 ]; then
    ncu=$(grep -cE 'Test +#[0-9]+: oracle_cuda[^ ]* \.+ +Passed' "$log")
    ncu_all=$(grep -cE 'Test +#[0-9]+: oracle_cuda[^ ]* \.+' "$log")
    T_NOTE[${#T_NOTE[@]}-1]="oracle_cuda* on the GPU: $ncu of $ncu_all passed; ${T_NOTE[${#T_NOTE[@]}-1]}"
  fi
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
if [ "$build" = ok ] && { [ $dry = 1 ] || [ -x "$dir/bench/bench_gpu" ]; }; then
  budget "$t_bench"; bnb=$B; bncut=$cut_note
  say "== bench_gpu --json ${BENCH_ARGS:-} --python $python"
  bout=$(cd "$dir" && step bench "$bnb" ./bench/bench_gpu --json ${BENCH_ARGS:-} --python "$python" 2>>"$log")
  brc=$?
  printf '%s\n' "$bout" >"$dir/bench_gpu.jsonl"
  printf '%s\n' "$bout" >>"$log"
  if printf '%s\n' "$bout" | grep -q '^bench_gpu: no CUDA device'; then
    trow "bench_gpu" "NO DEVICE" "" "" "" "" "$(printf '%s\n' "$bout" | grep -m1 '^bench_gpu: no CUDA device' | cut -c1-160)"
    fail=1
  else
    hdr=$(printf '%s\n' "$bout" | grep -m1 '^{"bench":"gpu"')
    bench_note="$([ -n "$hdr" ] && echo "torch $(jget torch "$hdr"); ")$(elapsed "$tbn") s of ${bnb} s${bncut}"
    if [ $brc -eq 0 ]; then
      trow "bench_gpu (exit status)" "$(ran)" "" "" "" "" "$bench_note$([ $dry = 1 ] && echo '; one row per benchmark')"
    else
      trow "bench_gpu (exit status)" "FAILED" "" "" "" "" \
        "exit $brc$([ $brc -eq 124 ] && echo " (timed out after ${bnb} s${bncut})"); wrong results or failed ops: see the log"
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
stage_done bench "$(elapsed "$tbn")"

# ---- 5. the table
total=$(elapsed "$t0")
{
  echo
  echo "wick CUDA device check$([ $dry = 1 ] && echo ' - DRY RUN (nothing built or run on a GPU)') - $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "GPU: $gpu"
  [ -n "$hdr" ] && echo "bench_gpu ran on: $(jget device "$hdr")"
  echo "python: $python ($py_kind; $pyver)   build ${tbuild} s, tests ${ttest} s, total ${total} s (cap T_TOTAL=${t_total} s)"
  echo "stages: $(printf '%s, ' "${STAGES[@]}" | sed 's/, $//')"
  echo "x torch: wick's speed-up over PyTorch (> 1: wick faster); result of a benchmark row: its goal met (yes/NO), - no goal"
  echo
  printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "check" "result" "wick" "torch" "x torch" "goal" "note"
  printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "----------------------------------------------------" "---------" \
    "----------" "----------" "-------" "----------------" "----"
  for i in "${!T_NAME[@]}"; do
    printf '%-52s %-9s %10s %10s %7s  %-16s %s\n' "${T_NAME[$i]:0:52}" "${T_RES[$i]}" "${T_WICK[$i]}" "${T_TORCH[$i]}" \
      "${T_X[$i]}" "${T_GOAL[$i]}" "${T_NOTE[$i]}"
  done
  printf '%-52s %-9s %s\n' "total" "$([ $fail = 0 ] && ran || echo FAILED)" "${total} s; log: $log"
} | tee -a "$log"
exit $fail
