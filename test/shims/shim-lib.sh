# shellcheck shell=bash
# Shared parts of the TEST shims `pct` and `docker` (test/shims/). Not a real container runtime: it gives each
# fake container its own /workspace (and any other top-level folder its rootfs holds) by bind mounts in a private
# user+mount namespace (`unshare -rm`, which works for unprivileged users on the test host).
#
# State root: $REMOTE_RUNS_SHIM_ROOT, else the first line of a file `shim-root` next to the shim (sshd does not
# pass our environment, so the harness writes that file when it installs the shims into a bin folder):
#   <root>/pct/<vmid>/{state,name,lock?,rootfs/}       state: running | stopped
#   <root>/docker/<name>/{state,status?,image?,id?,rootfs/}  state: running | exited | created | paused | …
#   <root>/docker/.daemon                              optional: down | denied (docker cannot reach its daemon)
#   <root>/node                                        optional: the Proxmox node name (default: hostname)

shim_root() {
  local tool=$1 here
  if [ -n "${REMOTE_RUNS_SHIM_ROOT:-}" ]; then printf '%s\n' "$REMOTE_RUNS_SHIM_ROOT"; return 0; fi
  here=$(dirname -- "$0")
  if [ -r "$here/shim-root" ]; then head -n 1 -- "$here/shim-root"; return 0; fi
  printf '%s (test shim): no state root: set REMOTE_RUNS_SHIM_ROOT or write %s/shim-root\n' "$tool" "$here" >&2
  return 1
}

# shim_enter STATE_ROOT ROOTFS HOME ARGV...: run ARGV with the rootfs' top-level folders over the host's, exit
# code passed through, argv passed through verbatim (no shell in between re-reads it).
shim_enter() {
  local root=$1 rootfs=$2 home=$3; shift 3
  mkdir -p -- "$root/.mnt" 2>/dev/null
  HOME=$home exec unshare -rm /bin/sh -c '
    rootfs=$1; mnt=$2; shift 2
    # Fast path: every top-level folder of the rootfs already has a mount point on the host (the harness
    # creates /workspace), so one bind mount each is enough.
    fast=1
    for e in "$rootfs"/* "$rootfs"/.[!.]*; do
      [ -d "$e" ] || continue
      n=${e##*/}
      if [ ! -d "/$n" ] || [ -L "/$n" ]; then fast=0; fi
    done
    if [ "$fast" = 1 ]; then
      for e in "$rootfs"/* "$rootfs"/.[!.]*; do
        [ -d "$e" ] || continue
        mount --rbind "$e" "/${e##*/}" || exit 255
      done
      cd / && exec "$@"
    fi
    # Otherwise build a root on a tmpfs: the host'"'"'s top-level entries bound in, the rootfs'"'"' folders instead
    # of theirs, then chroot. Nothing on the host changes.
    mount -t tmpfs -o mode=755 remote-runs-shim "$mnt" || exit 255
    for e in /* /.[!.]*; do
      [ -e "$e" ] || [ -L "$e" ] || continue
      n=${e#/}
      [ -d "$rootfs/$n" ] && continue
      if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$mnt/$n"
      elif [ -d "$e" ]; then mkdir "$mnt/$n" && mount --rbind "$e" "$mnt/$n"
      else : > "$mnt/$n" && mount --bind "$e" "$mnt/$n"; fi
    done
    for e in "$rootfs"/* "$rootfs"/.[!.]*; do
      [ -d "$e" ] || continue
      mkdir "$mnt/${e##*/}" && mount --rbind "$e" "$mnt/${e##*/}" || exit 255
    done
    cd "$mnt" && PWD=/ exec chroot "$mnt" "$@"
  ' shim-enter "$rootfs" "$root/.mnt" "$@"
}
