/**
 * The typed values everything inside the core trusts. Remote output and settings become these in one place
 * (the parsers under discovery/ and config.ts); nothing past that edge re-validates them.
 *
 * This folder never imports `vscode`.
 */

/**
 * Where a run lives: on an SSH host, the machine itself, a Proxmox LXC, or a Docker container; on a Kubernetes
 * cluster (ClusterConfig), a container of a pod.
 */
export type TargetKind = 'host' | 'pct' | 'docker' | 'pod';

export interface TargetRef {
  kind: TargetKind;
  /**
   * '' for `host`, the vmid for `pct`, the container name for `docker`; for `pod`, `NAMESPACE/POD:CONTAINER`
   * (kube/podTarget.ts: the three are Kubernetes names, which hold neither `/` nor `:`, so the split is unambiguous).
   */
  id: string;
}

/** State of a target as discovered on its host. */
export type TargetState = 'running' | 'stopped' | 'unknown';

export interface Target extends TargetRef {
  state: TargetState;
  /** Human name where the runtime has one (pct's Name column); equals `id` otherwise. */
  label: string;
}

/** A host as configured (setting `remoteRuns.hosts`, the CLI's --config, or ~/.ssh/config). */
export interface HostConfig {
  /** Display name and the key used in CLI addresses. */
  name: string;
  /** Hostname or an alias from ~/.ssh/config. */
  host: string;
  user?: string;
  port?: number;
  identityFile?: string | string[];
  /** OpenSSH ProxyJump syntax: `[user@]host[:port]`, several hops separated by commas. */
  proxyJump?: string;
  /** `auto` (default) discovers pct/docker; otherwise explicit target specs such as `host`, `pct:200`, `docker:trainer`. */
  targets?: 'auto' | string[];
  /** Directories searched for runs. Default: DEFAULT_RUN_ROOTS. */
  runRoots?: string[];
}

/**
 * A Kubernetes cluster as configured: an entry of `remoteRuns.hosts` (or the CLI config's `hosts`) with
 * `"kind": "kubernetes"` (docs/kubernetes.md). Kept apart from HostConfig, so no SSH code can be handed one: its
 * targets are pod containers reached through the user's own `kubectl` on this machine (kube/kubectl.ts).
 */
export interface ClusterConfig {
  kind: 'kubernetes';
  /** Display name and the key used in CLI addresses, unique among hosts and clusters. */
  name: string;
  /** The kubeconfig context (`kubectl --context`). */
  context: string;
  /** Only this namespace (`-n`); default: every namespace the user may list (`--all-namespaces`). */
  namespace?: string;
  /** A label selector for the pods shown (`-l`, kubectl's syntax), e.g. `training.kubeflow.org/job-name`. */
  selector?: string;
  /** The kubeconfig file (`--kubeconfig`; a leading `~` is the home folder); default: kubectl's own ($KUBECONFIG, ~/.kube/config). */
  kubeconfig?: string;
  /** Directories searched for runs inside each container. Default: DEFAULT_RUN_ROOTS. */
  runRoots?: string[];
}

export const DEFAULT_RUN_ROOTS: readonly string[] = ['/workspace', '~/runs', '~/checkpoints'];

/** One file inside a checkpoint folder. */
export interface CheckpointFile {
  name: string;
  path: string;
  bytes: number;
  /** Modification time, milliseconds since the epoch. */
  mtime: number;
}

export type CheckpointLayout =
  | 'step_N'
  | 'checkpoint-N'
  | 'global_stepN'
  | 'ckpt_N'
  | 'iter_N'
  | 'orbax'
  | 'lightning'
  | 'accelerate'
  | 'composer'
  | 'keras'
  | 'hf-final'
  | 'tf'
  | 'flat';

/**
 * What a checkpoint is, which says how its number reads:
 * - `step`: saved during training at `step` (a training step, update or iteration);
 * - `epoch`: its name gives only an epoch (`epoch`; fairseq's `checkpoint3.pt`, Keras' `model.03-….keras`), `step` null;
 * - `save`: its number counts saves, not steps (`save`; accelerate's `checkpoints/checkpoint_2` is the third save),
 *   `step` null;
 * - `alias`: a name for another save (`last.ckpt`, `checkpoint_best.pt`, Composer's `latest-rank0.pt`): see `alias`;
 * - `final`: the weights a finished run leaves without a step (Hugging Face `save_pretrained` output in the run
 *   folder, `model_final.pth`), `step` null.
 */
export type CheckpointKind = 'step' | 'epoch' | 'save' | 'alias' | 'final';

/** What an alias names, as far as the listing can tell. */
export interface CheckpointAlias {
  /** `last`, `best` or `latest`: the role its writer gives it. */
  role: 'last' | 'best' | 'latest';
  /** The checkpoint it is a link to (its name), when it is a symlink to one listed beside it. */
  of?: string;
  /** The step it holds, when known (from the link's target, or from its own name: NeMo's `…step=2000…-last.ckpt`). */
  step?: number;
  /**
   * How `of`/`step` are known: `symlink` (its target), `name` (its own name says the step), or `unknown` (a copy:
   * Lightning's `save_last=True`, fairseq's checkpoint_best/last.pt are written as separate files, and which save
   * they hold is only inside them).
   */
  how: 'symlink' | 'name' | 'unknown';
}

export interface Checkpoint {
  /** The entry's own name, e.g. `step_10000` or `model_step_500.pt`; `final` for step-less final weights. */
  name: string;
  kind: CheckpointKind;
  /** The training step, for `kind: 'step'`; null for every other kind (what their number counts is said there). */
  step: number | null;
  /** The epoch, when the name gives one (Lightning's `epoch=E-step=S`, fairseq's `checkpoint{E}.pt`). */
  epoch?: number;
  /** For `kind: 'save'`: the save's number as its writer counts (accelerate starts at 0). */
  save?: number;
  /** For `kind: 'alias'`. */
  alias?: CheckpointAlias;
  layout: CheckpointLayout;
  /** Absolute remote path (inside the target); for `final`, the run folder holding the files. */
  path: string;
  isDir: boolean;
  /** Total size in bytes: a folder's is the sum of its files. */
  bytes: number;
  mtime: number;
  /**
   * Files of a folder checkpoint (empty for a flat file). For `final` these are the files of the final weights
   * only, relative to `path` (the run folder also holds other things that a download of `final` leaves alone).
   */
  files: CheckpointFile[];
  /**
   * The checkpoint is these files of the folder at `path`, not the whole folder (TensorFlow's `ckpt-3.index` with its
   * `ckpt-3.data-*` shards beside other saves): a download takes only them, as for `final`.
   */
  fileGroup?: true;
  /** True on the checkpoint `latest` names (latestCheckpoint below says which). */
  newest: boolean;
  /**
   * Why the checkpoint is not complete yet, when its listing shows it (checkpointLayout.ts incompleteReason): it is
   * still listed, marked, and never `latest`.
   */
  incomplete?: string;
  /**
   * The folder reaches the listing's depth: files below it were not listed, so `bytes` counts only those that were
   * (shown as "≥ size") and completeness cannot be told.
   */
  partialSize?: true;
  /**
   * A pointer the framework itself keeps that names this checkpoint: DeepSpeed's `latest` file, Megatron-LM's
   * `latest_checkpointed_iteration.txt`, a `latest`/`last`/`best` symlink to a folder.
   */
  pointedBy?: string[];
  /**
   * The checkpoint is a symbolic link to a folder, with this text (the listing never walks into one,
   * discovery/listScript.ts). One naming a sibling listed beside it has that sibling's files and size.
   */
  link?: string;
  /**
   * `link` leaves the folder the checkpoint is in (absolute, through `..`, or to nothing listed beside it): not
   * followed, so `bytes` is 0 and unknown, and it is never `latest`; a pull refuses it (pull the folder it names).
   */
  linkOutside?: true;
  /**
   * Entries of the folder that are not files and that a pull leaves out, with why (transfer/remoteCommands.ts): FIFOs,
   * devices, broken links, links to folders outside the checkpoint. None of them is counted in `bytes`.
   */
  skipped?: SkippedEntry[];
}

/** A pointer file the run's framework keeps (DeepSpeed `latest`, Megatron `latest_checkpointed_iteration.txt`). */
export interface FrameworkPointer {
  /** The file's name. */
  file: string;
  /** What it says (its contents, trimmed). */
  says: string;
  /** The listed checkpoint it names, if any. */
  checkpoint?: string;
  /** Set when it disagrees with our `latest` or names nothing listed: said, never silently followed or dropped. */
  note?: string;
}

/**
 * The checkpoint `latest` names: the complete step checkpoint with the highest step; in a run without one, the
 * highest complete epoch or save; in a run with only final weights, those (a finished Hugging Face run). Aliases are
 * never `latest` themselves (they are names for saves). Undefined when nothing is complete.
 */
export function latestCheckpoint(run: Pick<Run, 'checkpoints'>): Checkpoint | undefined {
  return run.checkpoints.find((c) => c.newest);
}

/** The number a checkpoint sorts by within its kind: its step, epoch or save number (aliases: the step they hold). */
export function checkpointOrder(c: Checkpoint): number {
  return c.step ?? (c.kind === 'epoch' ? c.epoch : undefined) ?? c.save ?? c.alias?.step ?? -1;
}

/**
 * The step an eval of this checkpoint is recorded under (eval records, ids and tables are keyed by step): its own, or
 * the one an alias is known to hold. A checkpoint without a known step (final weights, an epoch- or save-numbered
 * one, an alias copy) fails with `bad-address` saying so, rather than being recorded under a made-up step.
 */
export function evalStep(c: Checkpoint): number {
  const step = c.step ?? c.alias?.step;
  if (step !== undefined) return step;
  throw new RemoteRunsError('bad-address', `${c.name} is ${checkpointLabel(c)}: evals are recorded by step, and this checkpoint has none; evaluate a step checkpoint`);
}

/** What `latest` is, in a run's summary: `latest step 30`, or `latest final (final weights (no step))`. */
export function latestPhrase(c: Checkpoint): string {
  return c.kind === 'step' ? `latest step ${c.step}` : `latest ${c.name} (${checkpointLabel(c)})`;
}

/** How a checkpoint is shown in one short phrase: `step 500`, `epoch 3`, `save 2 (counts saves, not steps)`, `last → step 30`, `final weights`. */
export function checkpointLabel(c: Checkpoint): string {
  switch (c.kind) {
    case 'step':
      return `step ${c.step}`;
    case 'epoch':
      return `epoch ${c.epoch} (no step in the name)`;
    case 'save':
      return `save ${c.save} (counts saves, not steps)`;
    case 'final':
      return 'final weights (no step)';
    case 'alias': {
      const a = c.alias;
      if (!a) return 'alias';
      if (a.of) return `${a.role} → ${a.of}${a.step !== undefined ? ` (step ${a.step})` : ''}`;
      if (a.step !== undefined) return `${a.role}, step ${a.step}`;
      return `${a.role} (which save it holds is inside the file)`;
    }
  }
}

export interface Run {
  name: string;
  /** Absolute remote path of the run directory (inside the target). */
  path: string;
  /** Absolute remote paths of metrics logs found. */
  metrics: string[];
  /**
   * Step checkpoints by step (ascending, as numbers), then epoch-only ones by epoch, then saves by number, then
   * aliases, then the final weights.
   */
  checkpoints: Checkpoint[];
  /** Pointer files of its framework (DeepSpeed `latest`, Megatron `latest_checkpointed_iteration.txt`). */
  pointers?: FrameworkPointer[];
  /**
   * Entries named as checkpoints that are not files or folders (a `last.ckpt` link whose save was rotated away, a
   * FIFO named `model_step_5.pt`): no checkpoint, said with why. `relative` is relative to the run's folder.
   */
  skipped?: SkippedEntry[];
  /** Newest mtime among the metrics logs, ms since epoch; 0 when there are none. */
  metricsMtime: number;
  /** A metrics log changed within LIVE_WINDOW_MS of the listing's remote clock. */
  live: boolean;
}

export const LIVE_WINDOW_MS = 2 * 60 * 1000;

/**
 * Every way a listing can come back empty or fail. Never fold two of these into one message:
 * (the Kubernetes ones, kube/errors.ts: `kube-config` no kubeconfig, a context that is not in it, or a kubeconfig
 * kubectl cannot read; `credential-plugin` an exec credential plugin that is missing or failed; `forbidden` RBAC
 * denied a verb on a resource; `exec-refused` the API server or kubelet refused the exec stream; `kubectl-missing`
 * the kubectl program is not there. A cluster's Unauthorized is `auth-failed`, a pod or container not found
 * `container-missing`, a pod not running (yet, or any more) `container-stopped`, an API server that does not
 * answer `unreachable`.)
 * that is how a user concludes "no checkpoints" when they were there all along.
 */
export type EmptyKind =
  | 'unreachable'
  | 'auth-failed'
  | 'host-key-unknown'
  | 'host-key-mismatch'
  | 'container-missing'
  | 'container-stopped'
  | 'path-missing'
  | 'permission-denied'
  | 'not-a-directory'
  | 'empty'
  | 'no-checkpoints'
  | 'command-failed'
  | 'kube-config'
  | 'credential-plugin'
  | 'forbidden'
  | 'exec-refused'
  | 'kubectl-missing';

/** The subset of EmptyKind that a single run root can end in (the rest concern host or target). */
export type RootEmptyKind = 'path-missing' | 'permission-denied' | 'not-a-directory' | 'empty' | 'no-checkpoints';

/**
 * Error kinds that are not about what is on the remote side, but about our own input or state. `too-large`: what
 * was read is too large to summarise in this process (a header whose summary would pass the limits of a JavaScript
 * string or the call stack); `internal`: a fault of this program, never of the remote side (`command-failed` is for
 * remote commands only).
 */
export type LocalErrorKind = 'bad-address' | 'bad-config' | 'not-found' | 'ambiguous' | 'cancelled' | 'timeout' | 'protocol' | 'too-large' | 'internal';

/**
 * Error kinds of a download: the local disk filled up, the remote file changed while it was fetched, the checksums
 * disagree (the `.part` is kept), the destination holds a different file the user did not agree to replace, another
 * process is downloading the same checkpoint, a part of the destination path is a file, or the local file system
 * cannot hold a remote name (`local-name`: not UTF-8 where it requires UTF-8, or too long; the file is named, nothing
 * is written under another name).
 */
export type TransferErrorKind = 'disk-full' | 'changed' | 'verify-failed' | 'exists' | 'busy' | 'not-a-directory' | 'local-name';

export type ErrorKind = EmptyKind | LocalErrorKind | TransferErrorKind;

/** The one error type the core throws. `kind` drives the UI's icon, message and actions. */
export class RemoteRunsError extends Error {
  override readonly name = 'RemoteRunsError';
  constructor(
    readonly kind: ErrorKind,
    message: string,
    /** Extra facts for the UI: exit code, stderr first line, file and line of a known_hosts entry, a few names seen… */
    readonly detail: Readonly<Record<string, string | number | string[]>> = {},
  ) {
    super(message);
  }
}

/**
 * The error for a checkpoint that is a link to a folder outside the one it is in (Checkpoint.linkOutside): never
 * followed, as the pull's walk refuses it (transfer/remoteCommands.ts), so nothing of it is read or fetched.
 */
export function linkOutsideError(c: Pick<Checkpoint, 'path' | 'link'>, verb: string): RemoteRunsError {
  return new RemoteRunsError('bad-address', `${c.path} is a symbolic link to ${JSON.stringify(c.link ?? '')}, a folder outside the one it is in; remote-runs does not follow it (${verb} the folder it names by its own address)`, { path: c.path, link: c.link ?? '' });
}

export function isRemoteRunsError(e: unknown): e is RemoteRunsError {
  return e instanceof RemoteRunsError;
}

/**
 * Any exception as a RemoteRunsError. One that is not already one happened in this process, never on the remote
 * side (that is `command-failed`): a limit a huge input reached (the call stack, a string's or an array's length) is
 * `too-large`, anything else `internal`.
 */
export function asRemoteRunsError(e: unknown): RemoteRunsError {
  if (isRemoteRunsError(e)) return e;
  const message = e instanceof Error ? e.message : String(e);
  const limit = e instanceof RangeError || (e as { code?: unknown } | undefined)?.code === 'ERR_STRING_TOO_LONG';
  return limit
    ? new RemoteRunsError('too-large', `too large to summarise here (${message})`)
    : new RemoteRunsError('internal', `a fault of remote-runs itself, not of the remote side: ${message}`);
}

/** What one run root held: runs, or exactly one reason it holds none. */
export type RootListing =
  | { root: string; path: string; state: 'ok'; runs: Run[]; truncated: boolean; tooLarge?: TooLarge[]; unreadable?: Unreadable; linksOut?: LinksOut }
  | {
      root: string;
      /** The absolute path the root resolved to (~ expanded) where known. */
      path: string;
      state: RootEmptyKind;
      message: string;
      /** For `no-checkpoints`: up to five entry names that were there. */
      seen: string[];
      truncated: boolean;
      tooLarge?: TooLarge[];
      unreadable?: Unreadable;
      linksOut?: LinksOut;
    };

/**
 * Links to folders outside the root that the listing did not follow (discovery/listScript.ts never enters a link to a
 * folder), other than checkpoints and what lies in them (those are said on the checkpoint): a run folder or its
 * `checkpoints/` linked in from another disk is not listed through the link, and this says so instead of nothing.
 */
export interface LinksOut {
  count: number;
  /** The first few: the link's path relative to the root and its text. */
  links: { rel: string; link: string }[];
}

/**
 * A folder under a root that held more entries than the listing's budget let it show: only part of it was listed,
 * so runs inside it may be missing. `rel` is relative to the root ('' for the root itself); `entries` is the count
 * seen.
 */
export interface TooLarge {
  rel: string;
  entries: number;
  /** `entries` is a lower bound: the count stopped there. */
  more?: boolean;
}

/** Places under a root the walk could not enter (permission, symlink loop): how many, and the first messages. */
export interface Unreadable {
  count: number;
  /** Up to three of the remote `find`'s own error lines. */
  messages: string[];
}

/** The result of listing a target: one entry per run root, in configured order. */
export interface TargetListing {
  target: TargetRef;
  roots: RootListing[];
  /** The roots are the defaults (the host configures none): a missing one is expected, not a problem. */
  defaultRoots?: true;
  /** The remote clock at listing time (ms since epoch), used for `live`. */
  remoteNow: number;
}

/** Spell a target as in addresses and settings: `host`, `pct:200`, `docker:name`, `pod:ns/pod:container`. */
export function formatTarget(t: TargetRef): string {
  return t.kind === 'host' ? 'host' : `${t.kind}:${t.id}`;
}

/** Parse `host`, `pct:200`, `docker:name`. Throws RemoteRunsError('bad-address'). */
export function parseTarget(spec: string): TargetRef {
  if (spec === 'host') return { kind: 'host', id: '' };
  // A pod container as formatTarget spells it (the language server's places, the tree's ids): its three names are
  // checked where it is reached (kube/names.ts parsePodTargetId, `bad-address` for anything else).
  if (spec.startsWith('pod:') && spec.length > 4) return { kind: 'pod', id: spec.slice(4) };
  const m = /^(pct|docker):(.+)$/s.exec(spec);
  if (!m) throw new RemoteRunsError('bad-address', `Not a target: ${JSON.stringify(spec)} (expected host, pct:<vmid>, docker:<name> or pod:<namespace>/<pod>:<container>)`);
  const kind = m[1] as 'pct' | 'docker';
  const id = m[2];
  if (kind === 'pct' && !/^\d+$/.test(id)) {
    throw new RemoteRunsError('bad-address', `A Proxmox container id is a number, not ${JSON.stringify(id)}`);
  }
  return { kind, id };
}

/** An entry of a checkpoint that a pull leaves out, and why (said in the pull's summary, never in silence). */
export interface SkippedEntry {
  /** Relative to the checkpoint path. */
  relative: string;
  why: SkipReason;
  /** The text of the symbolic link it is (or reached it through), when it is one. */
  link?: string;
}

/**
 * - `fifo`, `socket`, `char-device`, `block-device`, `other`: not a regular file (itself, or what its link leads to:
 *   `/dev/zero`, `/proc/self/fd/0`); reading it would block or never end.
 * - `broken-link`: a symbolic link to nothing; `link-loop`: a link that leads back to itself (ELOOP).
 * - `dir-link-outside`: a link to a folder outside the checkpoint (`up -> ../../..`, `root -> /`): never followed.
 */
export type SkipReason = 'fifo' | 'socket' | 'char-device' | 'block-device' | 'other' | 'broken-link' | 'link-loop' | 'dir-link-outside';

/** What a remote command gave back (remote.ts runs them). */
export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  /** Exit status; null when the remote side reported a signal instead. */
  code: number | null;
  signal?: string;
  /** stdout was cut at maxOutputBytes. */
  truncated: boolean;
  /** Bytes the login shell's rc files printed on stdout before the command's fence, dropped by runCommand. */
  shellNoise?: number;
}
