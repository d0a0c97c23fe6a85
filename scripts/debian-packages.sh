#!/usr/bin/env bash
# The Debian packages orch needs, through apt-get (sudo when not root), only those missing.
# Usage: scripts/debian-packages.sh [--for demo|test] [--dry-run]   (scripts/setup.sh's step)
#   demo  what building orch and `make demo` need;
#   test  (the default) that, plus what only the tests use: Catch2, clang-format, headless
#         Chromium, Slurm and munge;
#   --dry-run  the lists, the sizes measured on a clean Debian 12 and, where packages are
#         missing here, what apt-get --simulate says they would take; installs nothing.
#
# The daemons that test's packages bring (munge, and slurmctld and slurmd with slurm-wlm) are
# not started by the install and are left disabled at boot, where this run installed them: the
# Slurm test starts its own, with its own key and configuration, and a machine that is no Slurm
# node should not run them. Debian's postinst would start them and enable them. A machine that
# had them before keeps them as they were. POLICY_RC_D names the policy-rc.d file that keeps
# them from starting (default /usr/sbin/policy-rc.d, the one invoke-rc.d reads; a test points it
# elsewhere).
set -euo pipefail

FOR="test"
DRY_RUN=0
while [ $# -gt 0 ]; do
  case $1 in
    --for) FOR=${2:-}; shift 2 || { echo "setup: --for needs demo or test" >&2; exit 2; } ;;
    --dry-run) DRY_RUN=1; shift ;;
    *) echo "setup: debian-packages.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
case $FOR in
  demo | test) ;;
  *) echo "setup: --for takes demo or test, not '$FOR'" >&2; exit 2 ;;
esac
POLICY_RC_D=${POLICY_RC_D:-/usr/sbin/policy-rc.d}

# What building orch, and so `make demo`, needs.
DEMO_PACKAGES=(
  cmake ninja-build g++ ccache pkg-config
  libyaml-cpp-dev libsqlite3-dev sqlite3 libboost-dev libcli11-dev nlohmann-json3-dev
  libfmt-dev libxxhash-dev libjpeg62-turbo-dev libpng-dev python3-venv
  libcurl4-openssl-dev  # `orch export --to mlflow` talks to the tracking server over HTTP
)
# What only the tests use, added by --for test.
TEST_PACKAGES=(
  catch2  # the C++ test suites
  clang-format  # scripts/format.sh and its check in ctest
  chromium  # headless, for the test that opens `orch report`'s HTML in a real browser
  slurm-wlm munge  # a single-node Slurm on localhost, for the `orch sweep --launcher slurm` test
)
# The daemons those packages bring, as "package:service", left disabled where this run installs
# the package (see the top). slurm-wlm brings slurmctld and slurmd as packages of their own.
SERVICES=(munge:munge slurmctld:slurmctld slurmd:slurmd)
# Measured on a minimal Debian 12 (its required packages and apt) with apt-get install --simulate
# and the packages' Installed-Size and Size, recommends included as apt-get installs them.
DEMO_APT_MEASURED="149 packages with their dependencies, 127 MiB download, 576 MiB installed"
TEST_APT_MEASURED="311 more packages, 250 MiB download, 988 MiB installed"

DEBIAN_PACKAGES=("${DEMO_PACKAGES[@]}")
[ "$FOR" = test ] && DEBIAN_PACKAGES+=("${TEST_PACKAGES[@]}")

say() { echo "setup: $*"; }

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo

# quiet_service NAME: stops the daemon NAME if it runs as the system's service and keeps it from
# starting at boot; says so, or warns where it is still enabled. Only for a service whose package
# this run installed. systemctl disable works without a running systemd too (containers,
# chroots: it removes the links itself) and takes the SysV links with it; deb-systemd-helper
# would not do (it acts only when called from dpkg).
quiet_service() {
  local svc=$1
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now --quiet "$svc.service" >/dev/null 2>&1 || true
  else
    $SUDO service "$svc" stop >/dev/null 2>&1 || true
    if command -v systemctl >/dev/null; then
      $SUDO systemctl disable --quiet "$svc.service" >/dev/null 2>&1 || true
    else
      $SUDO update-rc.d "$svc" disable >/dev/null 2>&1 || true
    fi
  fi
  if command -v systemctl >/dev/null && [ "$(systemctl is-enabled "$svc.service" 2>/dev/null)" = enabled ]; then
    say "warning: $svc is still enabled at boot (systemctl disable $svc did not take)"
  else
    say "$svc (installed now) is not running and not enabled at boot"
  fi
}

missing=()
for p in "${DEBIAN_PACKAGES[@]}"; do
  installed "$p" || missing+=("$p")
done

if [ "$DRY_RUN" -eq 1 ]; then
  say "Debian packages for demo (${#DEMO_PACKAGES[@]}): ${DEMO_PACKAGES[*]}"
  say "  on a clean Debian 12: $DEMO_APT_MEASURED"
  if [ "$FOR" = test ]; then
    say "Debian packages for test, added (${#TEST_PACKAGES[@]}): ${TEST_PACKAGES[*]}"
    say "  on a clean Debian 12: $TEST_APT_MEASURED"
    say "  their daemons ($(printf '%s\n' "${SERVICES[@]#*:}" | paste -sd ' ')), where installed now:" \
      "not started, not enabled at boot"
  fi
  if [ ${#missing[@]} -eq 0 ]; then
    say "  here: all ${#DEBIAN_PACKAGES[@]} installed"
  else
    # apt-get --simulate needs no root and changes nothing; with empty package lists (no
    # apt-get update yet) it cannot say, and the measured figures above stand.
    if sim=$(apt-get --simulate install "${missing[@]}" 2>/dev/null | awk '/^Inst /{print $2}') &&
      [ -n "$sim" ]; then
      sizes=$(apt-cache show --no-all-versions $sim 2>/dev/null |
        awk '/^Installed-Size:/{i+=$2} /^Size:/{d+=$2} END{printf "%.0f MiB download, %.0f MiB installed", d/1048576, i/1024}')
      say "  here: would install ${missing[*]}: $(wc -w <<<"$sim") packages with their dependencies, $sizes"
    else
      say "  here: would install ${missing[*]} (apt-get could not simulate it: run apt-get update first)"
    fi
  fi
else
  if [ ${#missing[@]} -eq 0 ]; then
    say "all ${#DEBIAN_PACKAGES[@]} Debian packages for $FOR already installed"
  else
    say "installing Debian packages for $FOR: ${missing[*]}"
    # A daemon must not start from the install: where the machine has no policy-rc.d (Docker
    # images have one that refuses every start), one that refuses is in place for the install.
    policy=$POLICY_RC_D
    own_policy=0
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\n# scripts/setup.sh: no daemon starts while orch installs packages.\nexit 101\n' |
        $SUDO tee "$policy" >/dev/null
      $SUDO chmod 755 "$policy"
      own_policy=1
      trap '$SUDO rm -f "$policy"' EXIT
    fi
    services_before=()
    for entry in "${SERVICES[@]}"; do
      installed "${entry%%:*}" && services_before+=("${entry%%:*}")
    done
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
    if [ "$own_policy" -eq 1 ]; then
      $SUDO rm -f "$policy"
      trap - EXIT
    fi
    # The daemons of packages this run installed: stopped if one started anyway, and not
    # started at boot (Debian's postinst enables them).
    for entry in "${SERVICES[@]}"; do
      pkg=${entry%%:*}
      svc=${entry#*:}
      [[ " ${services_before[*]} " == *" $pkg "* ]] && continue
      installed "$pkg" || continue
      quiet_service "$svc"
    done
  fi
fi

