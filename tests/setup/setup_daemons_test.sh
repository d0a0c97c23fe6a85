#!/bin/bash
# scripts/debian-packages.sh (setup.sh's Debian step) leaves no daemon of its own install running
# or enabled at boot, and touches none it did not install. Nothing is installed for real:
# dpkg-query, apt-get, systemctl, service, update-rc.d and sudo are stand-ins that keep the
# machine's state in files. The apt-get stand-in does what Debian's postinst of munge, slurmctld
# and slurmd does (enable the service, and start it unless policy-rc.d refuses with 101), and
# records whether a start was refused. Checked:
#   - a bare machine, for test: the install ran under a policy-rc.d that refuses (none
#     started), that file is gone afterwards, and munge, slurmctld and slurmd are not enabled;
#   - a machine whose munge was installed (and enabled) before: munge is left enabled and never
#     named to systemctl; slurmctld and slurmd, installed now, are disabled;
#   - a machine with a policy-rc.d of its own: it is used and left as it was;
#   - for demo: no daemon's package is installed, no service touched.
# Usage: setup_daemons_test.sh SOURCE_DIR
set -u
SRC=$1
T=$(mktemp -d /tmp/orch-setup-daemons-test.XXXXXX)
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

# The stand-ins. $M (the machine) holds: installed (one package a line), enabled (services
# enabled at boot), running (services running), calls.log (every call of a service tool).
mkdir -p "$T/bin"
cat >"$T/bin/dpkg-query" <<'SH'
#!/bin/bash
pkg=${!#}
if grep -qx "$pkg" "$M/installed"; then echo "install ok installed"; else echo "unknown ok not-installed"; fi
SH
cat >"$T/bin/apt-get" <<'SH'
#!/bin/bash
echo "apt-get $*" >>"$M/calls.log"
[ "$1" = update ] && exit 0
[ "$1" = install ] || exit 1
for p in "$@"; do
  case $p in install | -*) continue ;; esac
  pkgs=("$p")
  [ "$p" = slurm-wlm ] && pkgs+=(slurmctld slurmd)
  for q in "${pkgs[@]}"; do
    grep -qx "$q" "$M/installed" && continue
    echo "$q" >>"$M/installed"
    case $q in munge | slurmctld | slurmd) ;; *) continue ;; esac
    # postinst: deb-systemd-helper enable, then invoke-rc.d start, which asks policy-rc.d
    echo "$q" >>"$M/enabled"
    if [ -x "$POLICY_RC_D" ] && { "$POLICY_RC_D" "$q" start; [ $? -eq 101 ]; }; then
      echo "$q" >>"$M/start-refused"
    else
      echo "$q" >>"$M/running"
    fi
  done
done
SH
cat >"$T/bin/systemctl" <<'SH'
#!/bin/bash
echo "systemctl $*" >>"$M/calls.log"
args=()
for a in "$@"; do case $a in --*) ;; *) args+=("${a%.service}") ;; esac; done
case ${args[0]} in
  is-enabled) if grep -qx "${args[1]}" "$M/enabled"; then echo enabled; else echo disabled; exit 1; fi ;;
  disable)
    sed -i "/^${args[1]}\$/d" "$M/enabled"
    [[ " $* " == *" --now "* ]] && sed -i "/^${args[1]}\$/d" "$M/running"
    ;;
esac
exit 0
SH
cat >"$T/bin/service" <<'SH'
#!/bin/bash
echo "service $*" >>"$M/calls.log"
[ "$2" = stop ] && sed -i "/^$1\$/d" "$M/running"
exit 0
SH
cat >"$T/bin/update-rc.d" <<'SH'
#!/bin/bash
echo "update-rc.d $*" >>"$M/calls.log"
SH
cat >"$T/bin/sudo" <<'SH'
#!/bin/bash
echo "sudo $*" >>"$M/calls.log"
exec "$@"
SH
chmod +x "$T/bin/"*

machine() {  # machine NAME [PACKAGE...]: a fresh machine with these packages installed (and enabled)
  export M=$T/$1
  shift
  mkdir -p "$M"
  : >"$M/installed"
  : >"$M/enabled"
  : >"$M/running"
  : >"$M/start-refused"
  : >"$M/calls.log"
  for p in "$@"; do
    echo "$p" >>"$M/installed"
    echo "$p" >>"$M/enabled"
  done
}
install_for() {  # install_for FOR [POLICY_RC_D]: output in $M/out
  PATH="$T/bin:$PATH" POLICY_RC_D=${2:-$M/policy-rc.d} \
    bash "$SRC/scripts/debian-packages.sh" --for "$1" >"$M/out" 2>&1
  echo $? >"$M/rc"
  echo "----- debian-packages.sh --for $1 on $(basename "$M")"
  cat "$M/out"
}
enabled() { grep -qx "$1" "$M/enabled"; }
running() { grep -qx "$1" "$M/running"; }

machine bare
install_for test
check "bare, test: exits 0" [ "$(cat "$M/rc")" = 0 ]
check "bare, test: all three daemons' packages were installed" \
  bash -c "grep -qx munge '$M/installed' && grep -qx slurmctld '$M/installed' && grep -qx slurmd '$M/installed'"
check "bare, test: the install started no daemon (policy-rc.d refused munge, slurmctld, slurmd)" \
  [ "$(sort "$M/start-refused" | paste -sd ' ')" = "munge slurmctld slurmd" ]
check "bare, test: the policy-rc.d made for the install is gone" [ ! -e "$M/policy-rc.d" ]
for s in munge slurmctld slurmd; do
  check "bare, test: $s is not enabled at boot" bash -c "! grep -qx $s '$M/enabled'"
  check "bare, test: $s is not running" bash -c "! grep -qx $s '$M/running'"
  check "bare, test: it says so for $s" grep -q "^setup: $s (installed now) is not running and not enabled at boot$" "$M/out"
done

machine slurm-node munge
install_for test
check "munge before: exits 0" [ "$(cat "$M/rc")" = 0 ]
check "munge before: munge is still enabled" enabled munge
check "munge before: munge was never named to systemctl or service" \
  bash -c "! grep -E '^(systemctl|service|update-rc.d) .*munge' '$M/calls.log'"
check "munge before: slurmctld, installed now, is not enabled" bash -c "! grep -qx slurmctld '$M/enabled'"
check "munge before: slurmd, installed now, is not enabled" bash -c "! grep -qx slurmd '$M/enabled'"

machine own-policy
printf '#!/bin/sh\n# the machine own\nexit 101\n' >"$M/my-policy-rc.d"
chmod 755 "$M/my-policy-rc.d"
cp "$M/my-policy-rc.d" "$M/my-policy-rc.d.orig"
install_for test "$M/my-policy-rc.d"
check "own policy: used (no daemon started)" [ "$(wc -l <"$M/start-refused")" = 3 ]
check "own policy: left as it was" cmp -s "$M/my-policy-rc.d" "$M/my-policy-rc.d.orig"
check "own policy: the daemons are not enabled either" [ ! -s "$M/enabled" ]

machine demo-only
install_for demo
check "demo: exits 0" [ "$(cat "$M/rc")" = 0 ]
check "demo: no daemon's package installed" \
  bash -c "! grep -qxE 'munge|slurmctld|slurmd|slurm-wlm|chromium' '$M/installed'"
check "demo: no service touched" bash -c "! grep -E '^(systemctl|service|update-rc.d) ' '$M/calls.log'"
check "demo: g++ was installed" grep -qx g++ "$M/installed"

[ "$FAILED" -eq 0 ]
