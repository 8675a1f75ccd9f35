/**
 * What runs in a pod container for every remote command: `sh -c LIFELINE sh LINE`, so that the command ends when
 * kubectl's connection does.
 *
 * Over SSH a dropped session ends the remote command (sshd closes the session and the command's next write, or its
 * hang-up, ends it). In a pod nothing does: the runtime never kills a process started by `kubectl exec` when kubectl
 * dies or its connection drops (containerd internal/cri/server/container_execsync.go, the comment on execInContainer:
 * the exec'd process is left to run), it only ends the copy loops, so the process's stdin reaches EOF and its
 * stdout/stderr either lose their reader (a write then gets SIGPIPE) or stop being read (a write then blocks for ever
 * once the pipe is full). A quiet command — `tail -f` of a metrics log with no new lines, a hash that writes only at
 * the end, a `sleep` — never writes, so never learns.
 *
 * The lifeline is kubectl's stdin. `kubectl exec -i` holds the container process's stdin open while kubectl lives and
 * its connection stands (kube/kubectl.ts runKubectl with `holdStdin` never writes it nor closes it); when kubectl
 * ends, is killed, or its owner dies (its stdin pipe closes with the owner), the runtime closes the process's stdin.
 * LIFELINE:
 *
 * 1. moves that stdin to fd 3 and gives fd 0 `/dev/null` (what a command without input met before: an input closed
 *    at once), and runs LINE (`eval "$1"`, the portable line shell/portable.ts built) in the background without fd 3;
 * 2. a watcher in the background reads fd 3 (`read`, a builtin: nothing is ever written to it) until EOF, then ends
 *    the command: when this shell leads its process group — as every process runc starts does (runc
 *    libcontainer/nsenter/nsexec.c, stage-2 `runc:[2:INIT]` calls setsid() before it execs the command), read from
 *    field 5 of /proc/$$/stat — SIGTERM to the whole group (`kill 0`: LINE and every process it started, pipes and
 *    children included), then after 2 s SIGKILL to whatever ignored it; otherwise SIGTERM to LINE's process alone;
 * 3. the shell waits for LINE, stops the watcher and exits with LINE's status, so a command that ends by itself
 *    returns its exit code and output unchanged.
 *
 * A command that needs its stdin (an eval's results sent as its input, ExecOptions.stdin) cannot have stdin as its
 * lifeline: it runs as plain `sh -c LINE` with `input: true`. Such commands read their input to its end and then
 * finish by themselves (short writes of a file); a kubectl that dies mid-input ends their input early (EOF), so they
 * end too.
 *
 * No local shell sees this argv (kubectl is started without one and sends each argument as its own `command`
 * parameter), so LINE is passed as `$1`, never pasted into the script: it is quoted once, by shell/quote.ts, when the
 * portable line was built.
 */

/** The watchdog script (constant: the command comes as `$1`). */
export const LIFELINE_SCRIPT = [
  'exec 3<&0 </dev/null',
  'eval "$1" 3<&- &',
  'c=$!',
  '{',
  '  while read -r _; do :; done',
  '  g=',
  '  read -r _ _ _ _ g _ </proc/$$/stat',
  '  if [ "$g" = "$$" ]; then trap "" TERM; kill -TERM 0; sleep 2; kill -KILL 0; else kill -TERM "$c"; fi',
  '} <&3 >/dev/null 2>&1 &',
  'w=$!',
  'exec 3<&-',
  'wait "$c"',
  'r=$?',
  'kill "$w" 2>/dev/null',
  'exit "$r"',
].join('\n');

export interface PodShellOptions {
  /** The command reads its stdin (an input is written to kubectl's stdin and closed): no lifeline, plain `sh -c LINE`. */
  input?: boolean;
}

/**
 * The argv (after `kubectl … exec -i POD -c C --`) that runs `line` in the container: `sh -c LIFELINE sh LINE`, or
 * `sh -c LINE` for a command that reads its input (`input`). The caller of the lifeline form must hold kubectl's stdin
 * open, unwritten, for as long as the command should run (closing it ends the command).
 */
export function podShellArgv(line: string, options: PodShellOptions = {}): string[] {
  return options.input ? ['sh', '-c', line] : ['sh', '-c', LIFELINE_SCRIPT, 'sh', line];
}
