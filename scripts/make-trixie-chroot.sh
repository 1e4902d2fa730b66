#!/usr/bin/env bash
# Makes, once, a Debian 13 (trixie) chroot holding PyTorch 2.6's torchrun, for the launch
# tests that run tinynet under the torchrun users install today (tests/dist/mnist_launch.py,
# scenarios torchrun26-*), and PyTorch 2.6 and ONNX Runtime 1.21 (python3-onnxruntime) for
# the interop tests (interop.pytorch26, interop.onnx_runtime121). Prints the chroot's path
# on its last line of stdout.
#
#   scripts/make-trixie-chroot.sh          # make it (root; debootstrap from Debian's archive)
#   scripts/make-trixie-chroot.sh --check  # print the path if it is ready, else exit 1
#
# The chroot is cached: TINYNET_TRIXIE_CHROOT (default /var/cache/tinynet/trixie-torch)
# is reused by every later run until deleted; a package added to `packages` below is
# installed into a cached chroot that lacks it.
# TINYNET_DEBIAN_MIRROR picks the archive.
#
# Debian's python3-torch 2.6 is built without libuv, yet its torchrun asks TCPStore for
# the libuv server (--standalone and static rendezvous alike: their TCPStore calls leave
# use_libuv at its default, True) and fails. A start-up hook in the chroot (a .pth file,
# playing the part of a sitecustomize) makes every TCPStore use_libuv=False, so torchrun
# hosts the classic store (TCPStoreBackend): the one tinynet's client then talks to.
set -euo pipefail

dir=${TINYNET_TRIXIE_CHROOT:-/var/cache/tinynet/trixie-torch}
mirror=${TINYNET_DEBIAN_MIRROR:-http://deb.debian.org/debian}
stamp=$dir/.tinynet-ready
failed=$dir.error # why the last attempt failed, for the tests' skip message
packages=(python3-torch python3-onnxruntime)

# Prints which of `packages` chroot $1 lacks.
missing_packages() {
  local p
  for p in "${packages[@]}"; do
    chroot "$1" dpkg-query -W -f='${Status}\n' "$p" 2> /dev/null | grep -q '^install ok installed$' || echo "$p"
  done
}

# Installs packages $2... into chroot $1 (mounts its /proc meanwhile).
install_packages() {
  local root=$1
  shift
  mount -t proc proc "$root/proc"
  (
    chroot "$root" apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q --no-install-recommends "$@" &&
      chroot "$root" apt-get clean
  ) || {
    umount "$root/proc"
    return 1
  }
  umount "$root/proc"
}

# Installs into chroot $1 the use_libuv=False hook and tinynet-host-exec, which runs a
# host program from torchrun in the chroot (tests/dist/trixie_run.sh mounts the host's
# root at /host).
#
# The hook: A .pth file runs at every interpreter
# start (a sitecustomize.py of ours would be shadowed by Debian's, /etc/python3.X); it sits
# beside torch because .pth files run while sys.path is still being built, and torch's
# directory is added last.
install_hook() {
  local site=/usr/lib/python3/dist-packages # Debian's python3-torch
  [[ -d $1$site/torch ]] || {
    echo "trixie chroot: no torch in $1$site" >&2
    return 1
  }
  rm -f "$1"/usr/local/lib/python3*/dist-packages/tinynet*
  cat > "$1$site/tinynet_classic_tcpstore.py" << 'PY'
"""tinynet's test chroot: this torch is built without libuv, yet torchrun asks TCPStore
for the libuv server; every TCPStore here uses the classic server (TCPStoreBackend)."""
try:
    import torch.distributed as _dist

    _tcp_store_init = _dist.TCPStore.__init__

    def _classic_tcp_store_init(self, *args, **kwargs):
        kwargs["use_libuv"] = False
        _tcp_store_init(self, *args, **kwargs)

    _dist.TCPStore.__init__ = _classic_tcp_store_init
except Exception:  # torch without distributed support: nothing to adjust
    pass
PY
  echo "import tinynet_classic_tcpstore" > "$1$site/tinynet-classic-tcpstore.pth"
  cat > "$1/usr/local/bin/tinynet-host-exec" << 'SH'
#!/bin/sh
# Runs a host program (absolute path) with the host's root and libraries, in this process.
exec chroot /host "$@"
SH
  chmod 755 "$1/usr/local/bin/tinynet-host-exec"
}

if [[ -f $stamp ]]; then
  install_hook "$dir" # cheap, and brings a chroot made by an older script up to date
  # A package added to `packages` since the chroot was made is installed now (the tests that
  # need it skip, saying why, until it is there).
  mapfile -t missing < <(missing_packages "$dir")
  if ((${#missing[@]})); then
    if [[ ${1:-} == --check || $(id -u) -ne 0 ]]; then
      echo "the trixie chroot at $dir lacks ${missing[*]} (add it with scripts/make-trixie-chroot.sh as root)" >&2
    else
      start=$(date +%s)
      if install_packages "$dir" "${missing[@]}" >&2; then
        echo "trixie chroot: added ${missing[*]} in $(($(date +%s) - start)) s" >&2
      else
        echo "trixie chroot: installing ${missing[*]} failed; the tests that need it will be skipped" >&2
      fi
    fi
  fi
  echo "$dir"
  exit 0
fi
if [[ ${1:-} == --check ]]; then
  echo "no trixie chroot at $dir (make it with scripts/make-trixie-chroot.sh as root)" >&2
  [[ -f $failed ]] && echo "the last attempt failed: $(cat "$failed")" >&2
  exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "trixie chroot: making $dir needs root (debootstrap, chroot, mount)" >&2
  exit 1
fi
if ! command -v debootstrap > /dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >&2
fi

# Built beside its final place and renamed when complete: an interrupted run leaves no
# half-made chroot that a later run would take for ready.
work=$dir.partial
cleanup() { umount "$work/proc" 2> /dev/null || true; }
log=$(mktemp)
trap 'rc=$?; cleanup; if ((rc)); then tail -n 3 "$log" | tr "\n" " " > "$failed"; fi; rm -f "$log"' EXIT
if [[ -d $work ]]; then
  cleanup
  rm -rf "$work"
fi
mkdir -p "$(dirname "$dir")"
start=$(date +%s)
{
  debootstrap --variant=minbase trixie "$work" "$mirror"
  install_packages "$work" "${packages[@]}"
} 2>&1 | tee "$log" >&2
install_hook "$work"
version=$(chroot "$work" python3 -c 'import torch; print(torch.__version__)' 2> /dev/null | tail -1)
touch "$work/.tinynet-ready"
mv "$work" "$dir"
rm -f "$failed"
echo "trixie chroot: torch $version in $dir, made in $(($(date +%s) - start)) s ($(du -sh "$dir" | cut -f1))" >&2
echo "$dir"
