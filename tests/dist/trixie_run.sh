#!/usr/bin/env bash
# Runs a command in the Debian 13 chroot that holds PyTorch 2.6's torchrun
# (scripts/make-trixie-chroot.sh), for the launch tests against torchrun 2.6 and the
# interop tests with PyTorch 2.6 and ONNX Runtime 1.21:
#
#   trixie_run.sh --check        # exit 0 when it can run, else print why and exit 77
#   trixie_run.sh CMD [ARGS...]  # run CMD inside (e.g. torchrun ...)
#
# It runs in a private mount namespace (unshare), so nothing it mounts outlives it:
# /proc and /dev, the host's /etc/hosts and /etc/resolv.conf, and the host's root at /host. torchrun in the chroot starts the
# tinynet binaries built on the host through `tinynet-host-exec BINARY ARGS`, which is
# `chroot /host BINARY ARGS`: the binary then runs with the host's own libraries, under
# the same pid torchrun started (so its signals and exit codes reach torchrun), and shares
# the host's network like everything in the chroot. Paths given to it are host paths.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
make_chroot=$here/../../scripts/make-trixie-chroot.sh

skip() {
  echo "SKIP: not run with PyTorch 2.6 (Debian 13 chroot): $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "they need root (chroot, mount namespaces); this runs as $(id -un)"
command -v unshare > /dev/null || skip "unshare (util-linux) is missing"
reason=$(bash "$make_chroot" --check 2>&1 > /dev/null) || skip "$reason"
dir=$(bash "$make_chroot" --check 2> /dev/null)
[[ ${1:-} == --check ]] && exit 0

export TRIXIE_DIR=$dir
exec unshare --mount --propagation private -- bash -c '
  set -e
  mount -t proc proc "$TRIXIE_DIR/proc"
  mount --rbind /dev "$TRIXIE_DIR/dev"
  # The host'"'"'s name must resolve in here too: --standalone gives it to the workers.
  for f in /etc/hosts /etc/resolv.conf; do
    [ -f "$f" ] && touch "$TRIXIE_DIR$f" && mount --bind "$f" "$TRIXIE_DIR$f"
  done
  mkdir -p "$TRIXIE_DIR/host"
  mount --rbind / "$TRIXIE_DIR/host"
  exec chroot "$TRIXIE_DIR" "$@"' trixie_run "$@"
