#!/usr/bin/env bash
# run_unittest.sh PYTHON MODULE: runs one unittest module of this folder with PYTHON; exit 77
# (ctest's Skipped) when that interpreter is absent, so a missing venv is visible, not a pass.
set -u
python=$1 module=$2
if ! [ -x "$python" ] && ! command -v "$python" >/dev/null 2>&1; then
  echo "skipped: no Python interpreter at $python (scripts/setup.sh makes the torch venv)"
  exit 77
fi
cd "$(dirname "$0")" && exec "$python" -m unittest -v "$module"
