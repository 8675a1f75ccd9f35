/**
 * The shell programs of the demo machine, kept as text so the demo needs no files beside its own code (it runs
 * from source with tsx or as one bundle alike). They are written into the demo tree on start.
 *
 * `pct` and `docker` answer as the real tools do for what Remote Runs uses: the same output formats, error texts
 * and exit codes as the test shims (test/shims/), which were checked against pve-container and docker 28. They run
 * inside the demo machine's namespaces, where each container is a folder `rootfs/` whose top-level folders replace
 * the machine's own for the command (a private mount namespace per exec, like `lxc-attach` gives).
 */

/** Where the emulated runtimes keep their containers, inside the demo machine (as Proxmox and Docker do). */
export const PCT_STATE = '/var/lib/lxc';
export const DOCKER_STATE = '/var/lib/docker/containers';
/** Folder of the demo's own programs inside the demo machine: first on PATH. */
export const DEMO_BIN = '/opt/remote-runs-demo/bin';
/** The eval script of the demo eval profile, inside the demo machine. */
export const DEMO_EVAL = '/opt/remote-runs-demo/eval-acceptance.sh';

/**
 * pid 1 of the demo machine's pid namespace. Builds the machine's root on a tmpfs (the system folders of the real
 * machine bound read-only, a fresh /proc, the demo's own folders instead of every other top-level folder, so the
 * user's files are not there at all), chroots into it, then waits: it reaps orphans (detached evals) and ends when
 * its stdin closes, i.e. when the demo process is gone, however it went. The kernel then kills every process of
 * the namespace: nothing the demo started can outlive it.
 *
 * Usage: sh holder.sh MNT MACHINE_DIR
 */
export const HOLDER_SCRIPT = String.raw`
set -u
mnt=$1; machine=$2
mount -t tmpfs -o mode=755 remote-runs-demo "$mnt" || exit 90
for n in bin sbin lib lib32 lib64 libx32 usr etc; do
  e=/$n
  if [ -L "$e" ]; then ln -s "$(readlink "$e")" "$mnt/$n"; continue; fi
  [ -d "$e" ] || continue
  mkdir "$mnt/$n" && mount --rbind "$e" "$mnt/$n" || exit 91
  # Read-only, so a demo command run by a root user cannot change the real system.
  mount -o remount,bind,ro "$mnt/$n" 2>/dev/null || mount -o remount,ro,bind "$mnt/$n" || exit 92
done
mkdir "$mnt/dev" && mount --rbind /dev "$mnt/dev" || exit 93
mkdir "$mnt/proc" && mount -t proc proc "$mnt/proc" || exit 94
for e in "$machine"/*; do
  [ -d "$e" ] || continue
  n=${"$"}{e##*/}
  [ -e "$mnt/$n" ] && continue
  mkdir "$mnt/$n" && mount --bind "$e" "$mnt/$n" || exit 95
done
cd "$mnt" || exit 96
exec chroot . /bin/sh -c '
  exec 3<&0
  cat <&3 >/dev/null 3<&- &
  watch=$!
  exec 0</dev/null 3<&-
  echo ready
  while kill -0 "$watch" 2>/dev/null; do wait; done
'
`;

/** Shared by pct and docker: enter a container's rootfs in a private mount namespace and run argv there. */
const ENTER_FUNCTION = String.raw`
# demo_enter ROOTFS HOME ARGV...: each top-level folder of ROOTFS replaces the machine's own for ARGV.
demo_enter() {
  local rootfs=$1 home=$2; shift 2
  HOME=$home exec unshare -m /bin/sh -c '
    cd "$1" || exit 255; shift
    for e in * .[!.]*; do
      [ -d "$e" ] || continue
      [ -d "/$e" ] || mkdir "/$e" || exit 255
      mount --rbind "$e" "/$e" || exit 255
    done
    cd / && exec "$@"' demo-enter "$rootfs" "$@"
}
`;

/** Proxmox VE's `pct`, for the demo: list, status, exec, start, stop. Texts as proxmox/pve-container prints them. */
export const PCT_SCRIPT = String.raw`#!/bin/bash
# Remote Runs DEMO stand-in for Proxmox VE's pct (not the real tool). State: ${PCT_STATE}/<vmid>/{state,name,rootfs/}.
set -u
root=${PCT_STATE}
node=$(head -n 1 -- /etc/remote-runs-demo-node 2>/dev/null || echo pve-demo)
${ENTER_FUNCTION}
die() { printf '%s\n' "$1" >&2; exit 255; }
ct_dir() {
  local vmid=$1
  [[ $vmid =~ ^[0-9]+$ ]] || die "400 Parameter verification failed.
vmid: invalid format - value does not look like a valid VM ID"
  [ -d "$root/$vmid" ] || die "Configuration file 'nodes/$node/lxc/$vmid.conf' does not exist"
  printf '%s\n' "$root/$vmid"
}
state_of() { head -n 1 -- "$1/state" 2>/dev/null || echo stopped; }
cmd=${"$"}{1:-}
[ $# -gt 0 ] && shift
case $cmd in
  list)
    ids=$(ls -1 -- "$root" 2>/dev/null | grep -E '^[0-9]+$' | sort -n)
    [ -n "$ids" ] || exit 0
    printf '%-10s %-10s %-12s %-20s\n' VMID Status Lock Name
    for id in $ids; do
      d=$root/$id
      printf '%-10s %-10s %-12s %-20s\n' "$id" "$(state_of "$d")" "$(head -n 1 -- "$d/lock" 2>/dev/null)" "$(head -n 1 -- "$d/name" 2>/dev/null)"
    done
    ;;
  status)
    [ $# -ge 1 ] || die "400 not enough arguments
pct status <vmid> [OPTIONS]"
    d=$(ct_dir "$1") || exit 255
    echo "status: $(state_of "$d")"
    ;;
  start|stop)
    [ $# -ge 1 ] || die "400 not enough arguments
pct $cmd <vmid> [OPTIONS]"
    d=$(ct_dir "$1") || exit 255
    if [ "$cmd" = start ]; then
      [ "$(state_of "$d")" = running ] && die "CT $1 already running"
      echo running > "$d/state"
    else
      [ "$(state_of "$d")" = running ] || die "CT $1 not running"
      echo stopped > "$d/state"
    fi
    ;;
  exec)
    [ $# -ge 1 ] || die "400 not enough arguments
pct exec <vmid> [<extra-args>] [OPTIONS]"
    vmid=$1; shift
    while [ $# -gt 0 ]; do
      case $1 in
        --keep-env) shift; [ $# -gt 0 ] && [[ $1 =~ ^[01]$ ]] && shift ;;
        --keep-env=*) shift ;;
        --) shift; break ;;
        *) break ;;
      esac
    done
    d=$(ct_dir "$vmid") || exit 255
    [ "$(state_of "$d")" = running ] || die "container '$vmid' not running!"
    [ $# -gt 0 ] || die "missing command at /usr/share/perl5/PVE/CLI/pct.pm line 245."
    demo_enter "$d/rootfs" /root "$@"
    ;;
  '') die "ERROR: no command specified
USAGE: pct <COMMAND> [ARGS] [OPTIONS]" ;;
  *) die "ERROR: unknown command 'pct $cmd'
USAGE: pct <COMMAND> [ARGS] [OPTIONS]" ;;
esac
`;

/** The Docker CLI, for the demo: ps (formats, -a, -q, --no-trunc), exec, start, stop. Texts as docker 28 prints them. */
export const DOCKER_SCRIPT = String.raw`#!/bin/bash
# Remote Runs DEMO stand-in for the Docker CLI (not the real tool). State: ${DOCKER_STATE}/<name>/{state,image,status?,rootfs/}.
set -u
shopt -u patsub_replacement 2>/dev/null
root=${DOCKER_STATE}
${ENTER_FUNCTION}
fail() { printf '%s\n' "$1" >&2; exit "${"$"}{2:-1}"; }
field() { head -n 1 -- "$1/$2" 2>/dev/null; }
state_of() { field "$1" state || echo exited; }
id_of() { printf '%s' "${"$"}{1##*/}" | sha256sum | cut -c1-64; }
status_of() {
  local s
  s=$(field "$1" status)
  if [ -n "$s" ]; then printf '%s\n' "$s"; return; fi
  case $(state_of "$1") in
    running) echo 'Up 2 hours' ;;
    paused) echo 'Up 2 hours (Paused)' ;;
    *) echo 'Exited (0) 3 hours ago' ;;
  esac
}
find_container() {
  local want=$1 d
  [ -n "$want" ] && [ -d "$root/$want" ] && [ "${"$"}{want#.}" = "$want" ] && { printf '%s\n' "$root/$want"; return 0; }
  for d in "$root"/*/; do
    d=${"$"}{d%/}
    [ -d "$d" ] || continue
    case $(id_of "$d") in "$want"*) [ ${"$"}{#want} -ge 4 ] && { printf '%s\n' "$d"; return 0; } ;; esac
  done
  return 1
}
json_escape() { local s=$1; s=${"$"}{s//\\/\\\\}; s=${"$"}{s//\"/\\\"}; printf '%s' "$s"; }
cmd=${"$"}{1:-}
[ $# -gt 0 ] && shift
case $cmd in
  ps)
    all=0 quiet=0 trunc=1 format=''
    while [ $# -gt 0 ]; do
      case $1 in
        -a|--all) all=1 ;;
        -q|--quiet) quiet=1 ;;
        --no-trunc) trunc=0 ;;
        -aq|-qa) all=1; quiet=1 ;;
        --format) shift; format=${"$"}{1:-} ;;
        --format=*) format=${"$"}{1#--format=} ;;
        *) fail "unknown flag: $1

Usage:  docker ps [OPTIONS]

Run 'docker ps --help' for more information" 125 ;;
      esac
      shift
    done
    table=0
    case $format in
      ''|table) table=1; format='{{.ID}}\t{{.Image}}\t{{.Command}}\t{{.CreatedAt}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}' ;;
      table\ *) table=1; format=${"$"}{format#table } ;;
    esac
    [ "$quiet" = 1 ] && { table=0; format='{{.ID}}'; }
    format=${"$"}{format//\\t/$'\t'}; format=${"$"}{format//\\n/$'\n'}
    if [ "$table" = 1 ]; then
      h=${"$"}{format//\{\{.ID\}\}/CONTAINER ID}; h=${"$"}{h//\{\{.Image\}\}/IMAGE}; h=${"$"}{h//\{\{.Command\}\}/COMMAND}
      h=${"$"}{h//\{\{.CreatedAt\}\}/CREATED}; h=${"$"}{h//\{\{.Status\}\}/STATUS}; h=${"$"}{h//\{\{.Ports\}\}/PORTS}
      h=${"$"}{h//\{\{.Names\}\}/NAMES}; h=${"$"}{h//\{\{.State\}\}/STATE}
      printf '%s\n' "$h"
    fi
    for d in "$root"/*/; do
      d=${"$"}{d%/}
      [ -d "$d" ] || continue
      name=${"$"}{d##*/}
      state=$(state_of "$d")
      [ "$all" = 1 ] || [ "$state" = running ] || continue
      id=$(id_of "$d"); [ "$trunc" = 1 ] && id=${"$"}{id:0:12}
      image=$(field "$d" image); image=${"$"}{image:-ubuntu:22.04}
      status=$(status_of "$d")
      if [ "$format" = json ]; then
        printf '{"Command":"\\"sleep infinity\\"","CreatedAt":"2024-05-01 10:00:00 +0000 UTC","ID":"%s","Image":"%s","Labels":"","LocalVolumes":"0","Mounts":"","Names":"%s","Networks":"bridge","Ports":"","RunningFor":"3 hours ago","Size":"0B","State":"%s","Status":"%s"}\n' \
          "$id" "$(json_escape "$image")" "$name" "$state" "$(json_escape "$status")"
        continue
      fi
      line=$format
      line=${"$"}{line//\{\{.Names\}\}/$name}; line=${"$"}{line//\{\{.Name\}\}/$name}; line=${"$"}{line//\{\{.State\}\}/$state}
      line=${"$"}{line//\{\{.Status\}\}/$status}; line=${"$"}{line//\{\{.ID\}\}/$id}; line=${"$"}{line//\{\{.Image\}\}/$image}
      line=${"$"}{line//\{\{.Command\}\}/\"sleep infinity\"}; line=${"$"}{line//\{\{.CreatedAt\}\}/2024-05-01 10:00:00 +0000 UTC}
      line=${"$"}{line//\{\{.Ports\}\}/}
      printf '%s\n' "$line"
    done
    ;;
  exec)
    workdir=''
    while [ $# -gt 0 ]; do
      case $1 in
        -i|--interactive|-t|--tty|-it|-ti|-d|--detach) ;;
        -u|--user|-e|--env) shift ;;
        -w|--workdir) shift; workdir=${"$"}{1:-} ;;
        --user=*|--env=*) ;;
        --workdir=*) workdir=${"$"}{1#--workdir=} ;;
        --) shift; break ;;
        -*) fail "unknown flag: $1

Usage:  docker exec [OPTIONS] CONTAINER COMMAND [ARG...]

Run 'docker exec --help' for more information" 125 ;;
        *) break ;;
      esac
      shift
    done
    [ $# -ge 2 ] || fail "docker: 'docker exec' requires at least 2 arguments

Usage:  docker exec [OPTIONS] CONTAINER COMMAND [ARG...]

See 'docker exec --help' for more information" 1
    name=$1; shift
    d=$(find_container "$name") || fail "Error response from daemon: No such container: $name"
    case $(state_of "$d") in
      running) ;;
      paused) fail "Error response from daemon: container $(id_of "$d") is paused, unpause the container before exec" ;;
      *) fail "Error response from daemon: container $(id_of "$d") is not running" ;;
    esac
    if [ -n "$workdir" ]; then set -- /bin/sh -c 'cd "$1" && shift && exec "$@"' sh "$workdir" "$@"; fi
    demo_enter "$d/rootfs" /root "$@"
    ;;
  start|stop)
    [ $# -ge 1 ] || fail "\"docker $cmd\" requires at least 1 argument."
    d=$(find_container "$1") || fail "Error response from daemon: No such container: $1"
    if [ "$cmd" = start ]; then echo running > "$d/state"; else echo exited > "$d/state"; fi
    rm -f -- "$d/status"
    printf '%s\n' "$1"
    ;;
  '') fail "Usage:  docker [OPTIONS] COMMAND" 0 ;;
  *) fail "docker: unknown command: docker $cmd

Run 'docker --help' for more information" 1 ;;
esac
`;

/**
 * The demo eval profile's script: "measures" a checkpoint's acceptance length, printing progress, then one JSON
 * result line. The value grows with the step (as a drafter that learns would), so results differ per checkpoint.
 *
 * Usage: sh eval-acceptance.sh CHECKPOINT [STEP]
 */
export const EVAL_SCRIPT = String.raw`#!/bin/sh
# Remote Runs demo eval: pretends to measure a drafter checkpoint's acceptance length on 200 prompts.
ckpt=$1; step=${"$"}{2:-0}
if [ ! -e "$ckpt" ]; then echo "eval: no such checkpoint: $ckpt" >&2; exit 2; fi
case $step in ''|*[!0-9]*) step=$(printf '%s' "$ckpt" | sed -n 's/.*[^0-9]\([0-9][0-9]*\)[^0-9]*$/\1/p'); step=${"$"}{step:-0} ;; esac
echo "loading drafter from $ckpt ($(du -sh --apparent-size "$ckpt" 2>/dev/null | cut -f1))"
echo "target: Qwen3-27B @ demo inference server, 200 prompts, temperature 0"
i=1
while [ "$i" -le 10 ]; do
  sleep 0.4
  echo "prompts $((i * 20))/200"
  i=$((i + 1))
done
awk -v s="$step" 'BEGIN { a = 1.2 + 2.6 * (1 - exp(-s / 14000)); printf "{\"acceptance_length\": %.3f, \"accept_rate\": %.4f, \"prompts\": 200}\n", a, a / 8 }'
`;
