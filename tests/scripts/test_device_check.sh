#!/usr/bin/env bash
# scripts/device-check.sh's own logic, tested here without a GPU through its
# --dry-run (every stage walked, the GPU / build steps only printed, their
# exit status faked by DEVICE_CHECK_FAKE). Checks: a row for every GPU_MODE
# program and every cmocka case; gpumode/ emptied first (a stale .o is never
# linked); a compile that fails or times out is a FAILED row, not a missing
# one; the GPU_MODE link gets the CUDA libraries CMake found and their rpath;
# each group has its own budget (a timed-out group does not starve the next);
# T_TOTAL cuts budgets and says so; a build failure stops the tests with
# FAILED; each stage's time is printed; the exit status follows the rows.
# Registered in tests/CMakeLists.txt as device_check_dry. A few seconds.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nfail=0
nchk=0
ok() { nchk=$((nchk + 1)); }
bad() { nchk=$((nchk + 1)); nfail=$((nfail + 1)); echo "FAIL: $*"; }
# expect DESC CONDITION...: CONDITION (a command) must succeed
expect() { local d=$1; shift; if "$@"; then ok; else bad "$d"; fi; }
has() { grep -qE -- "$2" <<<"$1"; }    # text regex
hasnt() { ! grep -qE -- "$2" <<<"$1"; }
row() { grep -E "^$2 " <<<"$1" | head -n 1; } # the table row whose check column is $2 (regex)

# run NAME [VAR=value ...]: one dry run into $tmp/NAME; sets out and rc
run() {
  local name=$1
  shift
  mkdir -p "$tmp/$name"
  out=$(env "$@" BUILD_DIR="$tmp/$name" PYTHON=python3 "$root/scripts/device-check.sh" --dry-run 2>&1)
  rc=$?
}

# ---- 1. a clean dry run: every row that would run, exit 0
run clean
if has "$out" '^cmocka +FAILED'; then
  echo "skipped: no cmocka here (the dry run would show no test rows)"
  exit 77
fi
expect "clean dry run exits 0 (got $rc)" [ "$rc" -eq 0 ]
expect "the table says DRY RUN" has "$out" 'DRY RUN'
ngm=0
for src in "$root"/tests/cuda/test_*_emu.cu; do
  grep -q GPU_MODE "$src" || continue
  n=$(basename "$src" .cu)
  ngm=$((ngm + 1))
  expect "a row for GPU_MODE $n" has "$out" "^kernels on the GPU: $n +would run"
  expect "compile line for $n" has "$out" "^dry-run: \[compile:$n, [0-9]+ s\] nvcc .*-DGPU_MODE .*tests/cuda/$n\.cu"
done
expect "the conv kernels have a GPU_MODE section" has "$out" '^kernels on the GPU: test_cuda_conv_emu +would run'
expect "several GPU_MODE programs ($ngm)" [ "$ngm" -ge 5 ]
for prog in test_cuda test_cuda_ops test_backend_ops; do
  while IFS= read -r c; do
    expect "a row for $prog: $c" has "$out" "^$prog: $c +would run"
  done < <(sed -nE 's/.*cmocka_unit_test[a-z_]*\(([A-Za-z0-9_]+).*/\1/p' "$root/tests/$prog.c")
  expect "$prog run with its own budget" has "$out" "^dry-run: \[prog:$prog, [0-9]+ s\] \./tests/$prog$"
done
for g in emu rest oracle; do expect "ctest group $g" has "$out" "^dry-run: \[group:$g, [0-9]+ s\] ctest "; done
expect "oracle group row" has "$out" '^oracle suite, CPU \+ GPU \(ctest -R oracle\) +would run'
expect "bench row" has "$out" '^bench_gpu \(exit status\) +would run'
expect "stage times printed" has "$out" '^stages: cmocka [0-9]+ s, python [0-9]+ s, build [0-9]+ s, .*GPU_MODE [0-9]+ s, .*ctest oracle [0-9]+ s, bench [0-9]+ s$'
expect "total row" has "$out" '^total +would run'
# the default budgets fit well inside 10 minutes
expect "budgets capped under 10 min" has "$out" 'cap T_TOTAL=([1-4][0-9][0-9]|5[0-8][0-9]) s'

# ---- 2. stale objects, failed and timed-out compiles
mkdir -p "$tmp/stale/gpumode"
: >"$tmp/stale/gpumode/test_cuda_conv_emu.o"  # an earlier run's objects
: >"$tmp/stale/gpumode/test_gone_emu.o"
run stale DEVICE_CHECK_FAKE="compile:test_cuda_conv_emu=1 compile:test_cuda_pool_emu=124"
expect "failed compile -> exit 1 (got $rc)" [ "$rc" -eq 1 ]
expect "FAILED row for a failed compile" has "$(row "$out" 'kernels on the GPU: test_cuda_conv_emu')" 'FAILED +compile failed \(exit 1\)'
expect "FAILED row for a timed-out compile" has "$(row "$out" 'kernels on the GPU: test_cuda_pool_emu')" 'FAILED +compile timed out'
expect "a failed compile is never linked (no stale .o)" hasnt "$out" 'link:test_cuda_conv_emu'
expect "a timed-out compile is never linked" hasnt "$out" 'link:test_cuda_pool_emu'
expect "nor run" hasnt "$out" 'run:test_cuda_(conv|pool)_emu'
expect "gpumode/ emptied first" [ ! -e "$tmp/stale/gpumode/test_gone_emu.o" ]
expect "an old program's .o gives no row" hasnt "$out" 'test_gone_emu'
expect "the others still build and run" has "$(row "$out" 'kernels on the GPU: test_cuda_sort_emu')" 'would run'
expect "total FAILED" has "$out" '^total +FAILED'

# ---- 3. link: the CUDA libraries CMake found and the rpath of its targets
mkdir -p "$tmp/link"
printf '%s\n' 'CUDA_cublas_LIBRARY:FILEPATH=/opt/fakecuda/lib/libcublas.so' \
  'CUDA_cublasLt_LIBRARY:FILEPATH=/opt/fakecuda/lib/libcublasLt.so' \
  'CUDA_cudart_static_LIBRARY:FILEPATH=/opt/fakecuda/lib/libcudart_static.a' \
  'CUDA_culibos_LIBRARY:FILEPATH=/opt/fakecuda/lib/libculibos.a' >"$tmp/link/CMakeCache.txt"
run link DEVICE_CHECK_FAKE="link:test_cuda_nn_emu=1 run:test_cuda_sort_emu=124 run:test_cuda_rand_emu=2"
l=$(grep -E '^dry-run: \[link:test_cuda_conv_emu' <<<"$out")
expect "link has the rpath of CMake's CUDA libs" has "$l" ' -Wl,-rpath,/opt/fakecuda/lib '
for lib in libcudart_static.a libculibos.a libcublas.so libcublasLt.so; do
  expect "link uses CMake's $lib" has "$l" " /opt/fakecuda/lib/$lib "
done
expect "link FAILED row" has "$(row "$out" 'kernels on the GPU: test_cuda_nn_emu')" 'FAILED +link failed'
expect "run timed out row" has "$(row "$out" 'kernels on the GPU: test_cuda_sort_emu')" 'FAILED +exit 124 \(timed out after [0-9]+ s\)'
expect "run failed row" has "$(row "$out" 'kernels on the GPU: test_cuda_rand_emu')" 'FAILED +exit 2'
expect "link failure -> exit 1" [ "$rc" -eq 1 ]

# ---- 4. a group that times out does not starve the next; programs fail
run groups DEVICE_CHECK_FAKE="group:emu=124 prog:test_cuda=1 bench=1"
expect "emu group TIMED OUT" has "$(row "$out" 'CUDA host-emulation tests')" 'FAILED .*TIMED OUT after 30 s'
expect "the next group keeps its own budget" has "$out" '^dry-run: \[group:rest, 30 s\]'
expect "the oracle suite keeps its own budget" has "$out" '^dry-run: \[group:oracle, 60 s\]'
expect "oracle row would still run" has "$(row "$out" 'oracle suite, CPU \+ GPU \(ctest -R oracle\)')" 'would run'
expect "test_cuda exit status row" has "$(row "$out" 'test_cuda')" 'FAILED +exit 1'
expect "bench FAILED" has "$(row "$out" 'bench_gpu \(exit status\)')" 'FAILED +exit 1'
expect "group failure -> exit 1" [ "$rc" -eq 1 ]
run budgets T_EMU=7 T_ORACLE=11
expect "T_EMU sets the emu budget" has "$out" '^dry-run: \[group:emu, 7 s\] ctest -j16 --timeout 7 '
expect "T_ORACLE sets the oracle budget" has "$out" '^dry-run: \[group:oracle, 11 s\]'

# ---- 5. T_TOTAL cuts budgets and says so
run cap T_TOTAL=20
expect "build budget cut" has "$(row "$out" 'configure \+ build')" 'budget cut from 200 s to (1[0-9]|20) s'
expect "bench budget cut" has "$out" '^dry-run: \[bench, (1[0-9]|20) s\]'

# ---- 6. a failed build: FAILED, nothing else runs
run build DEVICE_CHECK_FAKE="build=1"
expect "build FAILED" has "$(row "$out" 'configure \+ build')" 'FAILED'
expect "tests not run" has "$out" '^tests +not run +build failed'
expect "bench not run" has "$out" '^bench_gpu +not run'
expect "no compile after a failed configure" hasnt "$out" 'compile:'
expect "build failure -> exit 1" [ "$rc" -eq 1 ]

# ---- 7. arguments
"$root/scripts/device-check.sh" --bogus >/dev/null 2>&1
expect "unknown argument -> exit 2" [ $? -eq 2 ]

echo "total: $nchk checks, $nfail failures"
[ $nfail -eq 0 ]
