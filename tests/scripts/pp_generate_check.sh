#!/bin/bash
# `wick generate --pp 2` under mpirun against the same command in one
# process on the SmolLM2 GGUF: the same greedy text on stdout (rank 0's
# only), and the refusals: --pp with the wrong number of ranks, --tp with
# --pp. Usage: pp_generate_check.sh MPIEXEC WICK MODEL
set -u
mpiexec=$1 wick=$2 model=$3
errf=$(mktemp)
args=(-m "$model" -p "The three primary colors are" -n 16 --temp 0 --threads 1)
want=$("$wick" generate "${args[@]}" 2>/dev/null) || { echo "single-process run failed"; exit 1; }
got=$("$mpiexec" --oversubscribe -np 2 "$wick" generate --pp 2 "${args[@]}" 2>"$errf")
rc=$?
if [ $rc -ne 0 ] || [ "$got" != "$want" ]; then
    echo "--pp 2 (rc $rc) gave: [$got]"; echo "one process gave: [$want]"; cat "$errf"
    rm -f "$errf"; exit 1
fi
grep -q "2 pipeline ranks" "$errf" || { echo "no timings from rank 0:"; cat "$errf"; exit 1; }
rm -f "$errf"
err=$("$wick" generate --pp 2 "${args[@]}" 2>&1 >/dev/null) && { echo "--pp 2 in one process succeeded"; exit 1; }
case "$err" in *"--pp 2 but the job has 1 rank"*) ;; *) echo "wrong refusal: $err"; exit 1 ;; esac
err=$("$wick" generate --pp 2 --tp 2 "${args[@]}" 2>&1 >/dev/null) && { echo "--tp with --pp succeeded"; exit 1; }
case "$err" in *"cannot be used together"*) ;; *) echo "wrong refusal: $err"; exit 1 ;; esac
echo "ok: same text: $got"
