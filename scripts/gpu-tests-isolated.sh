#!/usr/bin/env bash
# Runs ON the GPU machine after a build: each GPU test case matching SPEC in a process of its
# own, under its own time limit, then one line per case and a summary. Why: some cases hang
# when other GPU tests have run before them in the same process and pass on their own (the
# hidden [fused_bn_graph] case); one process per case keeps one case's leftovers (CUDA graphs,
# streams, loader threads) from reaching the next, and a hang costs one case its limit, named,
# instead of the whole suite. ctest registers every case the same way ("gpu: <case>"); this
# script also takes hidden cases and any Catch2 test spec, and keeps the failed cases' logs.
#   usage: scripts/gpu-tests-isolated.sh [SPEC] [per-case seconds]
#   e.g.   scripts/gpu-tests-isolated.sh "[max_pool],[fused_bn]" 120
# FROM=N skips the first N matching cases (in --list-test-names-only order), so a suite cut
# short by a call's time limit goes on in the next call where it stopped.
# Needs build-gpu/tests/orch_gpu_tests (scripts/gpu-build.sh or gpu-snapshot.sh). Logs: one
# file per case under $OUT/gpu-tests/ (failed and timed-out cases only, to keep $OUT small)
# and $OUT/gpu-tests.txt. Exit status: 0 when every case passed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-out}
spec=${1:-}
limit=${2:-180}
bin=./build-gpu/tests/orch_gpu_tests
mkdir -p "$OUT/gpu-tests"
mapfile -t cases < <("$bin" --list-test-names-only ${spec:+"$spec"} | sed '/^$/d')
summary="$OUT/gpu-tests.txt"
: > "$summary"
failed=0
from=${FROM:-0}
for i in "${!cases[@]}"; do
  (( i < from )) && continue
  name=${cases[$i]}
  log="$OUT/gpu-tests/case-$i.log"
  t0=$(date +%s)
  # The name as a test spec: Catch treats , [ ] \ * specially, so escape them.
  escaped=$(printf '%s' "$name" | sed 's/[][,\\*]/\\&/g')
  timeout "$limit" "$bin" "$escaped" > "$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  case $rc in
    0) verdict="passed" ;;
    124) verdict="TIMED OUT after ${limit} s" ;;
    *) verdict="FAILED (exit $rc)" ;;
  esac
  if (( rc == 0 )); then rm -f "$log"; else failed=$(( failed + 1 )); fi
  printf '%-9s %4d s  %s\n' "${verdict%% *}" "$secs" "$name" | tee -a "$summary"
  (( rc != 0 )) && tail -n 20 "$log" | sed 's/^/    /' | tee -a "$summary"
done
ran=$(( ${#cases[@]} > from ? ${#cases[@]} - from : 0 ))
echo "$ran of ${#cases[@]} cases run (from $from), $(( ran - failed )) passed, $failed failed or timed out" \
  | tee -a "$summary"
(( failed == 0 ))
