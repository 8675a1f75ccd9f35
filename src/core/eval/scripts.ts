/**
 * The POSIX sh scripts behind eval commands. Each runs as `sh -c SCRIPT NAME ARGS…` inside the target, so every
 * value arrives as its own argv word (quoted once by the runner) and the scripts never splice values into code.
 * They use only what a minimal container has: sh builtins, /proc, cat, head, tail, wc, mkdir, mv, ln, rm, sleep,
 * and setsid (util-linux or busybox); Slurm's own tools for Slurm evals.
 *
 * The eval folder (`<evals>/<id>/`):
 *   meta.json   written once at launch (tmp + rename)
 *   log         stdout and stderr of the eval, appended
 *   wrapper     pid of the waiting wrapper shell (direct evals)
 *   pid         pid of the eval = its process group id (direct evals; written before the launch returns)
 *   jobid       Slurm job id (Slurm evals)
 *   status      exit status, written (tmp + rename) by the wrapper once the eval's main process ended
 *   stopped     time a stop was asked for
 *   results.jsonl  written once (hard link: the first writer wins) when the results are recorded
 *   spec.json   a measured eval's whole result (a speculative-server eval: core/eval/spec/record.ts), for the card
 *
 * An eval measured here rather than run there (a speculative-server eval) is written whole by MEASURED_SCRIPT:
 * meta.json, log, results.jsonl, spec.json and status 0, in one rename, so a listing never sees it half written.
 */

/** String.raw, except that `\${` (needed to write a shell `${…}` in a template literal) becomes `${`. */
function sh(strings: TemplateStringsArray, ...values: string[]): string {
  return String.raw(strings, ...values).replace(/\\\$\{/g, '${');
}

/** Shared helpers: `~` expansion, liveness from /proc (zombies are not alive), Slurm queue state. */
const COMMON = sh`
expand() { case $1 in '~') printf '%s\n' "$HOME" ;; '~/'*) printf '%s/%s\n' "$HOME" "\${1#'~/'}" ;; *) printf '%s\n' "$1" ;; esac; }
# proc_alive PID: the process exists and is not a zombie.
proc_alive() {
  [ -n "$1" ] || return 1
  if [ -r /proc/self/stat ]; then
    { read -r pa_l < "/proc/$1/stat"; } 2>/dev/null || return 1
    pa_l=\${pa_l##*) }
    case $pa_l in Z*|X*) return 1 ;; esac
    return 0
  fi
  kill -0 "$1" 2>/dev/null
}
# group_alive PGID: some live (non-zombie) process is in that process group.
group_alive() {
  [ -n "$1" ] || return 1
  if [ -r /proc/self/stat ]; then
    for ga_f in /proc/[0-9]*/stat; do
      { read -r ga_l < "$ga_f"; } 2>/dev/null || continue
      ga_l=\${ga_l##*) }
      set -f
      # shellcheck disable=SC2086
      set -- "$1" $ga_l
      set +f
      case $2 in Z*|X*) continue ;; esac
      [ "$4" = "$1" ] && return 0
    done
    return 1
  fi
  kill -0 -- "-$1" 2>/dev/null
}
# slurm_state JOBID: the scheduler's state word (PENDING, RUNNING, COMPLETED, CANCELLED…), empty when unknown.
slurm_state() {
  ss=$(squeue -h -t all -j "$1" -o %T 2>/dev/null | head -n 1)
  if [ -z "$ss" ] && command -v sacct >/dev/null 2>&1; then
    ss=$(sacct -n -X -P -j "$1" -o State 2>/dev/null | head -n 1)
    ss=\${ss%% *}
  fi
  printf '%s' "$ss"
}
# eval_alive DIR: sets alive=1 when the eval (or its wrapper, or its Slurm job) is still there, else 0; and qstate
# to the Slurm state word for Slurm evals.
eval_alive() {
  qstate= alive=0
  if [ -s "$1/jobid" ]; then
    qstate=$(slurm_state "$(cat "$1/jobid")")
    case $qstate in PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|REQUEUED|REQUEUE_HOLD|REQUEUE_FED|RESIZING|SIGNALING|STAGE_OUT|STOPPED) alive=1 ;; esac
    return 0
  fi
  if proc_alive "$(cat "$1/wrapper" 2>/dev/null)" || group_alive "$(cat "$1/pid" 2>/dev/null)"; then alive=1; fi
  return 0
}
write_once() { printf '%s\n' "$2" > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"; }
`;

/**
 * The wrapper: session leader of its own session (started with setsid by the launcher), it starts the eval in a
 * session (and process group) of its own, records that pid, waits, and writes the exit status. Stopping signals
 * only the eval's group, so the wrapper survives to record the status (143 after TERM, 137 after KILL).
 * Args: DIR CWD COMMAND [NAME=VALUE…]
 */
export const WRAPPER_SCRIPT = sh`
dir=$1 cwd=$2 cmd=$3
shift 3
write_once() { printf '%s\n' "$2" > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"; }
write_once "$dir/wrapper" "$$"
if ! cd -- "$cwd"; then
  printf 'remote-runs: cannot change to the working directory %s\n' "$cwd"
  write_once "$dir/pid" "$$"
  write_once "$dir/status" 126
  exit 126
fi
# A background child of a shell without job control is not a group leader, so setsid needs no fork: $! is the eval.
setsid env "$@" sh -c "$cmd" &
child=$!
write_once "$dir/pid" "$child"
# wait returns early only for a trapped signal; go on waiting while the child is still there.
while :; do
  wait "$child"
  rc=$?
  kill -0 "$child" 2>/dev/null || break
done
write_once "$dir/status" "$rc"
`;

/**
 * Launch a direct eval. Args: EVALS_DIR ID META_JSON COMMAND CWD WRAPPER [NAME=VALUE…]. Creates the folder (an
 * existing one fails: a launch never happens twice), starts the wrapper detached (setsid, stdin /dev/null, output
 * to the log), waits until the eval's pid is recorded, and prints `started PGID DIR`.
 */
export const LAUNCH_SCRIPT = sh`
set -u
${COMMON}
root=$(expand "$1") id=$2 meta=$3 cmd=$4 wrapper=$6
# $(…) drops trailing newlines, which a run folder's name may end in: keep them with a sentinel.
cwd=$(expand "$5"; echo .) && cwd=\${cwd%?.}
shift 6
command -v setsid >/dev/null 2>&1 || { echo "remote-runs: setsid is not available here (install util-linux or busybox)" >&2; exit 97; }
mkdir -p -- "$root" || exit 98
dir=$root/$id
mkdir -- "$dir" || { echo "remote-runs: cannot create the eval folder $dir" >&2; exit 98; }
write_once "$dir/meta.json" "$meta" || exit 98
: > "$dir/log"
setsid sh -c "$wrapper" remote-runs-eval "$dir" "$cwd" "$cmd" "$@" < /dev/null >> "$dir/log" 2>&1 &
i=0
while [ ! -s "$dir/pid" ]; do
  i=$((i + 1))
  if [ "$i" -gt 400 ]; then echo "remote-runs: the eval did not record its pid within 20 s" >&2; exit 99; fi
  sleep 0.05 2>/dev/null || sleep 1
done
printf 'started %s %s\n' "$(cat "$dir/pid")" "$dir"
`;

/**
 * Submit a Slurm eval. Args: EVALS_DIR ID META_JSON JOB_SCRIPT CWD [SBATCH_OPTION…]. Writes the folder and
 * job.sh, submits `sbatch --parsable` with the output file in the folder, records the job id, prints
 * `submitted JOBID DIR`.
 */
export const SLURM_LAUNCH_SCRIPT = sh`
set -u
${COMMON}
root=$(expand "$1") id=$2 meta=$3 job=$4
# $(…) drops trailing newlines, which a run folder's name may end in: keep them with a sentinel.
cwd=$(expand "$5"; echo .) && cwd=\${cwd%?.}
shift 5
command -v sbatch >/dev/null 2>&1 || { echo "remote-runs: sbatch is not installed here, so a Slurm profile cannot run" >&2; exit 97; }
mkdir -p -- "$root" || exit 98
dir=$root/$id
mkdir -- "$dir" || { echo "remote-runs: cannot create the eval folder $dir" >&2; exit 98; }
write_once "$dir/meta.json" "$meta" || exit 98
printf '%s\n' "$job" > "$dir/job.sh" || exit 98
: > "$dir/log"
# sbatch expands %j, %u… in file names; a backslash anywhere turns all patterns off, otherwise %% is a literal %.
out=$dir/log
case $out in *\\*) ;; *) out=$(printf '%s' "$out" | sed 's/%/%%/g') ;; esac
if ! jobid=$(sbatch --parsable --job-name="rr-$id" --output="$out" --open-mode=append --chdir="$cwd" "$@" "$dir/job.sh" "$dir" "$cwd" 2> "$dir/sbatch.err"); then
  cat "$dir/sbatch.err" >&2
  cat "$dir/sbatch.err" >> "$dir/log"
  write_once "$dir/status" 1
  exit 95
fi
jobid=\${jobid%%;*}
write_once "$dir/jobid" "$jobid"
printf 'submitted %s %s\n' "$jobid" "$dir"
`;

/**
 * List every eval under EVALS_DIR in one pass. Args: EVALS_DIR TAIL_BYTES. Output, per eval folder:
 *   E <id>
 *   F <name> <bytes>\n<exactly that many bytes>\n      for meta, pid, jobid, status, stopped, results, tail
 *   L <log bytes>   A <0|1 alive>   Q <slurm state or ->
 * A missing EVALS_DIR prints `N` (no evals yet), which is not an error.
 */
export const LIST_SCRIPT = sh`
${COMMON}
root=$(expand "$1") tailmax=$2
[ -d "$root" ] || { echo N; exit 0; }
# An unreadable folder must not look like "no evals".
{ [ -r "$root" ] && [ -x "$root" ]; } || { echo "remote-runs: permission denied reading $root" >&2; exit 94; }
emit() {
  [ -f "$2" ] || return 0
  n=$(($(wc -c < "$2")))
  printf 'F %s %s\n' "$1" "$n"
  head -c "$n" "$2"
  printf '\n'
}
for d in "$root"/*/; do
  [ -d "$d" ] || continue
  d=\${d%/}
  # Only folder names an eval id can have: anything else (a newline!) could break the framing.
  case \${d##*/} in *[!A-Za-z0-9._-]*) continue ;; esac
  [ -f "$d/meta.json" ] || continue
  printf 'E %s\n' "\${d##*/}"
  emit meta "$d/meta.json"
  emit pid "$d/pid"
  emit jobid "$d/jobid"
  emit status "$d/status"
  eval_alive "$d"
  # Read the status again after the liveness check: an eval that ended in between has its status by now.
  emit status "$d/status"
  emit stopped "$d/stopped"
  emit results "$d/results.jsonl"
  emit spec "$d/spec.json"
  size=0
  [ -f "$d/log" ] && size=$(($(wc -c < "$d/log")))
  printf 'L %s\nA %s\n' "$size" "$alive"
  [ -s "$d/jobid" ] && printf 'Q %s\n' "\${qstate:--}"
  if [ ! -f "$d/status" ] && [ "$alive" = 1 ]; then continue; fi
  off=$((size > tailmax ? size - tailmax : 0))
  n=$((size - off))
  printf 'F tail %s\n' "$n"
  if [ "$n" -gt 0 ]; then tail -c "+$((off + 1))" "$d/log" | head -c "$n"; fi
  printf '\n'
done
`;

/**
 * Read the log of one eval from an offset. Args: DIR OFFSET MAX_BYTES. Prints a header line
 * `<status or -> <log bytes> <alive 0|1> <slurm state or ->` then at most MAX_BYTES of the log from OFFSET.
 * Liveness, then status, then size are read in that order, so "status present and everything up to size read"
 * means the whole log was delivered.
 */
export const READ_SCRIPT = sh`
${COMMON}
dir=$(expand "$1") off=$2 max=$3
[ -f "$dir/meta.json" ] || { echo "remote-runs: no eval folder at $dir" >&2; exit 96; }
eval_alive "$dir"
q=$qstate
st=-
[ -f "$dir/status" ] && st=$(head -n 1 "$dir/status")
size=0
[ -f "$dir/log" ] && size=$(($(wc -c < "$dir/log")))
n=$((size - off))
[ "$n" -gt "$max" ] && n=$max
[ "$n" -lt 0 ] && n=0
printf '%s %s %s %s\n' "\${st:--}" "$size" "$alive" "\${q:--}"
if [ "$n" -gt 0 ]; then tail -c "+$((off + 1))" "$dir/log" | head -c "$n"; fi
`;

/**
 * Stop one eval. Args: DIR GRACE_TENTHS. Direct evals: TERM to the process group, up to the grace period for it to
 * go, then KILL; Slurm evals: scancel with TERM, then KILL. Waits for the wrapper's status (writes 137 itself if the
 * wrapper is gone). Prints `stopped <killed 0|1> <left 0|1> <status or ->`: left=1 means something of the group
 * survived even KILL.
 */
export const STOP_SCRIPT = sh`
${COMMON}
dir=$(expand "$1") grace=$2
[ -f "$dir/meta.json" ] || { echo "remote-runs: no eval folder at $dir" >&2; exit 96; }
tick() { sleep 0.1 2>/dev/null || sleep 1; }
killed=0 left=0
if [ -s "$dir/jobid" ]; then
  job=$(cat "$dir/jobid")
  eval_alive "$dir"
  if [ "$alive" = 1 ]; then
    [ -f "$dir/stopped" ] || write_once "$dir/stopped" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    if [ "$qstate" = PENDING ]; then scancel "$job"; else scancel --full --signal=TERM "$job"; fi
    i=0
    while eval_alive "$dir" && [ "$alive" = 1 ] && [ "$i" -lt "$grace" ]; do tick; i=$((i + 1)); done
    if [ "$alive" = 1 ]; then scancel --full --signal=KILL "$job"; killed=1; fi
    i=0
    while eval_alive "$dir" && [ "$alive" = 1 ] && [ "$i" -lt 100 ]; do tick; i=$((i + 1)); done
    [ "$alive" = 1 ] && left=1
  fi
else
  pg=$(cat "$dir/pid" 2>/dev/null)
  if group_alive "$pg"; then
    [ -f "$dir/stopped" ] || write_once "$dir/stopped" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    kill -s TERM -- "-$pg" 2>/dev/null
    i=0
    while group_alive "$pg" && [ "$i" -lt "$grace" ]; do tick; i=$((i + 1)); done
    if group_alive "$pg"; then kill -s KILL -- "-$pg" 2>/dev/null; killed=1; fi
    i=0
    while group_alive "$pg" && [ "$i" -lt 50 ]; do tick; i=$((i + 1)); done
    group_alive "$pg" && left=1
  fi
  i=0
  while [ ! -f "$dir/status" ] && proc_alive "$(cat "$dir/wrapper" 2>/dev/null)" && [ "$i" -lt 50 ]; do tick; i=$((i + 1)); done
  if [ ! -f "$dir/status" ] && [ "$left" = 0 ] && ! proc_alive "$(cat "$dir/wrapper" 2>/dev/null)"; then write_once "$dir/status" 137; fi
fi
st=-
[ -f "$dir/status" ] && st=$(head -n 1 "$dir/status")
printf 'stopped %s %s %s\n' "$killed" "$left" "$st"
`;

/**
 * Record results once. Args: DIR; stdin: the results.jsonl text. A hard link from a temporary file is atomic and
 * fails when results.jsonl exists, so of several clients recording the same eval exactly one writes.
 * Prints `written` or `exists`.
 */
export const RECORD_SCRIPT = sh`
${COMMON}
dir=$(expand "$1")
[ -f "$dir/meta.json" ] || { echo "remote-runs: no eval folder at $dir" >&2; exit 96; }
if [ -e "$dir/results.jsonl" ]; then cat > /dev/null; echo exists; exit 0; fi
tmp=$dir/.results.tmp.$$
cat > "$tmp" || { rm -f -- "$tmp"; exit 98; }
if ln -- "$tmp" "$dir/results.jsonl" 2>/dev/null; then echo written
elif [ -e "$dir/results.jsonl" ]; then echo exists
else rm -f -- "$tmp"; echo "remote-runs: cannot write $dir/results.jsonl" >&2; exit 98
fi
rm -f -- "$tmp"
`;

/**
 * Write an eval that already ended (measured by this client: a speculative-server eval) as a whole folder. Args:
 * EVALS_DIR ID META_JSON LOG RESULTS_JSONL SPEC_JSON. The files are written in a hidden folder beside the others
 * (the listing's `*` glob never matches a leading dot) and renamed to the eval's id at once, so every client sees
 * either nothing or the eval with its status, results and spec.json: never an eval without status (which a listing
 * would take as lost and record results for from a half-written log). An existing id fails, as a launch does.
 * Prints `recorded DIR`.
 */
export const MEASURED_SCRIPT = sh`
set -u
${COMMON}
root=$(expand "$1") id=$2
mkdir -p -- "$root" || exit 98
dir=$root/$id
[ -e "$dir" ] && { echo "remote-runs: the eval folder $dir exists already" >&2; exit 98; }
tmp=$root/.$id.tmp.$$
mkdir -- "$tmp" || { echo "remote-runs: cannot create the eval folder $tmp" >&2; exit 98; }
if printf '%s\n' "$3" > "$tmp/meta.json" && printf '%s' "$4" > "$tmp/log" && printf '%s' "$5" > "$tmp/results.jsonl" \
  && printf '%s\n' "$6" > "$tmp/spec.json" && printf '0\n' > "$tmp/status" && mv -- "$tmp" "$dir"; then
  printf 'recorded %s\n' "$dir"
else
  rm -rf -- "$tmp"
  echo "remote-runs: cannot write the eval folder $dir" >&2
  exit 98
fi
`;

/** The Slurm batch script: the job's shell runs the eval and records its status. Args: DIR CWD. */
export function slurmJobScript(quotedEnvAndCommand: string): string {
  return [
    '#!/bin/sh',
    '# Written by Remote Runs: runs one eval and records its exit status beside its log.',
    'dir=$1 cwd=$2',
    'write_once() { printf \'%s\\n\' "$2" > "$1.tmp.$$" && mv -f "$1.tmp.$$" "$1"; }',
    // A trapped TERM (scancel) lets the shell outlive its child long enough to record 143; children get the default.
    "trap 'term=1' TERM",
    'cd -- "$cwd" || { write_once "$dir/status" 126; exit 126; }',
    quotedEnvAndCommand,
    'rc=$?',
    'write_once "$dir/status" "$rc"',
    'exit "$rc"',
    '',
  ].join('\n');
}
