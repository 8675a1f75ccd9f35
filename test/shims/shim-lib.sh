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

# shim_enter STATE_ROOT ROOTFS HOME ARGV...: run ARGV inside the container (shim-enter.sh does the mounts).
shim_enter() {
  local root=$1 rootfs=$2 home=$3; shift 3
  mkdir -p -- "$root/.mnt" 2>/dev/null
  HOME=$home exec unshare -rm /bin/sh "$(dirname -- "$0")/shim-enter.sh" "$rootfs" "$root/.mnt" "$@"
}
