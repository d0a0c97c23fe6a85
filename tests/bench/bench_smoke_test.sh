#!/usr/bin/env bash
# bench/run's suites end to end on the CPU (--smoke: ResNet18, batch 2, 32x32, 1 + 2 steps):
# every cell of each suite must give a number on both sides, which bench/run's exit status
# says (1 when any cell failed). Not a measurement: it proves the driver still runs its cells,
# which a change in orch's command line can break without a GPU test noticing (a suite once
# ran only its first cell). Exit 77 (ctest: Skipped) without the torch venv's python.
#   usage: bench_smoke_test.sh ORCH PYTHON OUT SUITE...
set -uo pipefail
orch=$1 python=$2 out=$3
shift 3
if [ ! -x "$python" ]; then
  echo "SKIPPED: no python with torch at $python (scripts/setup.sh makes it)"
  exit 77
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
python3 "$here/bench/run" "$@" --device cpu --smoke --orch "$orch" --python "$python" --out "$out"
