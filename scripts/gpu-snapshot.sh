#!/usr/bin/env bash
# Runs ON the GPU machine: builds exactly the committed state. The device's copy of the
# working tree carries a stale .git (whatever HEAD was when that copy was first made), so git
# must not run there; instead the caller makes a snapshot here and carries it with the bundle:
#   git archive --format=tar HEAD -o third_party/gpu-bundle/snap.tar      (ignored folder)
#   device: carry [third_party/gpu-bundle]; command: scripts/gpu-snapshot.sh && cd /tmp/snap && ...
# It unpacks the snapshot into SNAP (default /tmp/snap), puts the bundle's prefix beside it and
# builds with scripts/gpu-build.sh without running tests (the caller picks which ones to run).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
snap=${SNAP:-/tmp/snap}
rm -rf "$snap" && mkdir -p "$snap/third_party/gpu-bundle"
tar -xf "$here/third_party/gpu-bundle/snap.tar" -C "$snap"
cp -a "$here/third_party/gpu-bundle/prefix" "$snap/third_party/gpu-bundle/"
cd "$snap" && scripts/gpu-build.sh -R '^none-wanted$' > /dev/null
tail -n 3 "${OUT:-$snap/gpu-out}/build.log"
