#!/bin/bash
# What `make demo` and `make test` install, without installing anything: scripts/setup.sh
# --dry-run for demo and for test, on a machine made to look bare (dpkg-query says no package is
# installed, $ORCH_CACHE is an empty folder's child), with apt-get, apt-cache and sudo replaced
# by stand-ins that record how they were called. Checked:
#   - the test-only packages (Slurm, munge, Chromium, Catch2, clang-format) and the MLflow venv
#     are in test's list and not in demo's; demo's packages are all in test's;
#   - the daemons test's packages bring (munge, slurmctld, slurmd) are said to be left disabled;
#   - a dry run installs nothing: apt-get only ever simulates, sudo is never called, the cache
#     folder is not even made, and it says what it would install with sizes;
#   - the Makefile hands them on: `make -n demo` runs setup.sh --for demo and configures a fresh
#     folder with ORCH_BUILD_TESTS=OFF, `make -n test` --for test and ON;
#   - a wrong --for is refused (exit 2).
# Usage: setup_dry_run_test.sh SOURCE_DIR
set -u
SRC=$1
T=$(mktemp -d /tmp/orch-setup-test.XXXXXX)
FAILED=0
finish() {
  if [ "$FAILED" -ne 0 ]; then
    grep -h "^FAIL: " "$T/checks.log" 2>/dev/null
    echo "FAILED (files kept in $T)"
  else
    rm -rf "$T"
    echo "PASSED"
  fi
}
trap finish EXIT
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what" | tee -a "$T/checks.log"; FAILED=1; fi
}

# The stand-ins. apt-get --simulate answers one "Inst" line per package named (no dependencies),
# apt-cache gives each 2 MiB installed and 1 MiB to download; anything else is recorded as a
# call that a dry run must not make.
mkdir -p "$T/bin"
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/sh
echo "unknown ok not-installed"
SH
cat >"$T/bin/apt-get" <<SH
#!/bin/bash
echo "apt-get \$*" >>"$T/calls.log"
[ "\$1" = --simulate ] && [ "\$2" = install ] || exit 1
shift 2
for p in "\$@"; do echo "Inst \$p (1.0 Debian:12/stable [amd64])"; done
SH
cat >"$T/bin/apt-cache" <<'SH'
#!/bin/bash
[ "$1" = show ] || exit 1
for p in "$@"; do
  case $p in show | --*) continue ;; esac
  printf 'Package: %s\nInstalled-Size: 2048\nSize: 1048576\n\n' "$p"
done
SH
cat >"$T/bin/sudo" <<SH
#!/bin/sh
echo "sudo \$*" >>"$T/calls.log"
exit 1
SH
chmod +x "$T/bin/"*
touch "$T/calls.log"

dry_run() {  # dry_run FOR: setup.sh's output in $T/FOR.out, its exit status in $T/FOR.rc
  PATH="$T/bin:$PATH" ORCH_CACHE="$T/cache/orch" bash "$SRC/scripts/setup.sh" --for "$1" --dry-run \
    >"$T/$1.out" 2>&1
  echo $? >"$T/$1.rc"
  echo "----- setup.sh --for $1 --dry-run"
  cat "$T/$1.out"
}
dry_run demo
dry_run test

check "demo's dry run exits 0" [ "$(cat "$T/demo.rc")" = 0 ]
check "test's dry run exits 0" [ "$(cat "$T/test.rc")" = 0 ]
# "setup:   here: would install P1 P2 ...: N packages with their dependencies, ..."
would() { sed -n 's/^setup:   here: would install \([^:]*\):.*/\1/p' "$T/$1.out" | tr ' ' '\n'; }
would demo >"$T/demo.list"
would test >"$T/test.list"
check "demo's dry run names what it would install" [ -s "$T/demo.list" ]
for p in slurm-wlm munge chromium catch2 clang-format; do
  check "$p is not installed for demo" bash -c "! grep -qx '$p' '$T/demo.list'"
  check "$p is installed for test" grep -qx "$p" "$T/test.list"
done
for p in g++ cmake libyaml-cpp-dev python3-venv; do
  check "$p is installed for demo" grep -qx "$p" "$T/demo.list"
done
check "every package of demo's is in test's" \
  bash -c "[ -z \"\$(comm -23 <(sort '$T/demo.list') <(sort '$T/test.list'))\" ]"
# The stand-ins' sizes: demo's packages at 2 MiB installed each, so the sum is computed, not a
# fixed text.
n=$(wc -l <"$T/demo.list")
check "demo's sizes are summed from apt ($n packages, $((2 * n)) MiB installed)" \
  grep -q "^setup:   here: would install .*: $n packages with their dependencies, $n MiB download, $((2 * n)) MiB installed$" "$T/demo.out"
check "the measured sizes of a clean Debian 12 are printed for demo" \
  grep -Eq "^setup:   on a clean Debian 12: .*[0-9]+ MiB installed" "$T/demo.out"
check "and for what test adds" grep -Eq "^setup:   on a clean Debian 12: [0-9]+ more packages" "$T/test.out"
check "test's daemons are said to be left disabled" \
  grep -q "^setup:   their daemons (munge slurmctld slurmd), where installed now: not started, not enabled at boot$" "$T/test.out"
check "the MLflow venv is only for test (demo)" grep -q "^setup: mlflow .*only for test" "$T/demo.out"
check "the MLflow venv would be installed for test" grep -q "^setup: mlflow==.*would install" "$T/test.out"
check "torch would be installed for demo too" grep -q "^setup: torch==.*would install" "$T/demo.out"

check "apt-get was only asked to simulate" bash -c "! grep -v '^apt-get --simulate install ' '$T/calls.log'"
check "apt-get was asked at all (for demo and for test)" [ "$(grep -c '^apt-get --simulate' "$T/calls.log")" = 2 ]
check "nothing was made in the cache" [ ! -e "$T/cache" ]
check "each dry run says nothing was installed" [ "$(cat "$T"/*.out | grep -c '^setup: dry run: nothing was installed$')" = 2 ]
check "no TORCH_PREFIX line (make must not configure from a dry run)" bash -c "! grep -q '^TORCH_PREFIX=' '$T'/*.out"

PATH="$T/bin:$PATH" ORCH_CACHE="$T/cache/orch" bash "$SRC/scripts/setup.sh" --for everything --dry-run \
  >"$T/bad.out" 2>&1
rc=$?
check "--for everything is refused with exit 2, got $rc" [ "$rc" = 2 ]

# The Makefile: printed, not run (-n), against a build folder that does not exist.
make -n -C "$SRC" --no-print-directory demo BUILD="$T/build" >"$T/make-demo.out" 2>&1
make -n -C "$SRC" --no-print-directory test BUILD="$T/build" >"$T/make-test.out" 2>&1
check "make demo runs setup.sh --for demo" grep -q "scripts/setup.sh --for demo " "$T/make-demo.out"
check "make demo configures without the tests" grep -q "^tests=OFF;" "$T/make-demo.out"
check "make test runs setup.sh --for test" grep -q "scripts/setup.sh --for test " "$T/make-test.out"
check "make test configures with the tests" grep -q "^tests=ON;" "$T/make-test.out"
check "make -n made no build folder" [ ! -e "$T/build" ]

[ "$FAILED" -eq 0 ]
