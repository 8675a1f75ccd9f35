/**
 * The logs of a job: `kubectl logs --timestamps [-f]` of every pod of the job (every container, or each pod's default
 * one), merged in time order with the pod's rank as the prefix (`[worker-1] …`), each started through the kube runner
 * (kubectl.ts runKubectl: the one process starter, kubectl in a process group of its own).
 *
 * - Order: kubectl's `--timestamps` puts the kubelet's RFC 3339 time (nanoseconds, trailing zeros trimmed: Go's
 *   time.RFC3339Nano, kubelet `pkg/kubelet/kuberuntime/logs/logs.go`) before each line. Lines of different pods
 *   arrive over different streams, so a line is held `delayMs` after it arrives and released in time order with
 *   whatever else has arrived (LogMerger); one that arrives later than that with an earlier time is shown when it
 *   comes, never dropped.
 * - A place per rank: a slot is a rank label of the job (workloads.ts placeOf: `master-0`, `workers-0-2`, `3`) and a
 *   container. When its follow ends (the container exited or restarted: the kubelet ends `logs -f` at the end of the
 *   file of an exited container), the job's pods are listed again and the slot follows whichever pod now has that
 *   rank: the same pod restarted, or a new pod that replaced it (a JobSet's pod of a new name, a Training Operator's
 *   of the same name and another uid), from `--since-time` of the last line it showed, so no line is shown twice.
 * - What kubectl refuses is said (`onNote`) in kubectl's own words, and a failure that concerns the whole cluster
 *   (auth, RBAC, unreachable, kubeconfig) ends the follow with that error.
 * Lines are shown through displayText (shared/display.ts): a log line is remote text, and reaches no terminal raw.
 */
import { RemoteRunsError } from '../types';
import { displayText } from '../../shared/display';
import { kubectlArgs, runKubectl, type KubectlAccess, type RunKubectlOptions } from './kubectl';
import { kubectlFailure } from './errors';
import { defaultContainer } from './podAddress';
import { listClusterTargets } from './clusterTargets';
import type { RankedPod, Workload } from './workloads';

/** One line of a job's logs. */
export interface JobLogLine {
  /** The rank label of the pod's place in its job (`worker-1`). */
  label: string;
  container: string;
  pod: string;
  /** The kubelet's timestamp, as kubectl printed it. */
  time: string;
  /** A sortable form of `time` (seconds since the epoch, zero-padded, then nine digits of nanoseconds). */
  key: string;
  text: string;
}

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) (.*)$/s;

/** `2026-12-05T10:01:02.123456789Z text` → its time, sortable key and text; undefined for a line without a stamp. */
export function parseTimestamped(line: string): { time: string; key: string; text: string } | undefined {
  const m = STAMP.exec(line);
  if (!m) return undefined;
  const seconds = Date.parse(`${m[1]}${m[3]}`);
  if (Number.isNaN(seconds)) return undefined;
  const key = `${String(Math.floor(seconds / 1000)).padStart(12, '0')}.${(m[2] ?? '').padEnd(9, '0')}`;
  return { time: line.slice(0, line.indexOf(' ')), key, text: m[4] };
}

/** `[worker-1] text` (`[worker-1:sidecar] text` when the job's logs show several containers), shown safe for a terminal. */
export function formatLogLine(line: Pick<JobLogLine, 'label' | 'container' | 'text'>, withContainer: boolean): string {
  return `[${line.label}${withContainer ? `:${line.container}` : ''}] ${displayText(line.text)}`;
}

/**
 * Merges lines of several streams in time order. A line is held `delayMs` after it arrives; `take` releases the lines
 * held that long, and with them every line held with an earlier or equal time, sorted by time, then by the order of
 * their slots (`slotOrder`), then by arrival. Pure: the caller gives the clock.
 */
export class LogMerger {
  private held: { line: JobLogLine; at: number; seq: number }[] = [];
  private seq = 0;

  constructor(
    private readonly delayMs: number,
    private readonly slotOrder: (line: JobLogLine) => number = () => 0,
  ) {}

  push(line: JobLogLine, now: number): void {
    this.held.push({ line, at: now, seq: this.seq++ });
  }

  /** The lines ready at `now` (every line held, with `all`), in order. */
  take(now: number, all = false): JobLogLine[] {
    if (this.held.length === 0) return [];
    let cut: string | undefined;
    if (!all) {
      for (const h of this.held) if (h.at <= now - this.delayMs && (cut === undefined || h.line.key > cut)) cut = h.line.key;
      if (cut === undefined) return [];
    }
    const out = all ? this.held : this.held.filter((h) => h.line.key <= cut!);
    this.held = all ? [] : this.held.filter((h) => h.line.key > cut!);
    return out
      .sort((a, b) => (a.line.key < b.line.key ? -1 : a.line.key > b.line.key ? 1 : this.slotOrder(a.line) - this.slotOrder(b.line) || a.seq - b.seq))
      .map((h) => h.line);
  }

  get size(): number {
    return this.held.length;
  }
}

export interface JobLogsOptions {
  /** Follow (`logs -f`) until cancelled or every pod has ended; default true. Without: what is there now, merged. */
  follow?: boolean;
  /** `all`: every container of every pod; `default` (the default): each pod's default container (podAddress.ts). */
  containers?: 'all' | 'default';
  signal?: AbortSignal;
  onLine(line: JobLogLine): void;
  /** What happened to a slot, said beside the lines: restarted, replaced, not started yet, kubectl's refusal. */
  onNote?(label: string, text: string): void;
  /** Only this rank (and this container of it): one pod's place of the job, followed as in the whole job. */
  only?: { label: string; container?: string };
  /** The job listed again (its pods now); default: the cluster's pods grouped again (clusterTargets.ts), the job found by its namespace, name and grouping. */
  relist?(signal?: AbortSignal): Promise<Workload | undefined>;
  /** Between listings while a slot waits for its pod; default 2000 ms. */
  pollMs?: number;
  /** How long a line is held for lines of other pods with an earlier time; default 300 ms. */
  delayMs?: number;
  env?: RunKubectlOptions['env'];
}

interface Slot {
  label: string;
  container: string;
  order: number;
  pod: RankedPod;
  /** The last line shown: its time (for --since-time) and key (to drop what was shown). */
  lastTime?: string;
  lastKey?: string;
  following: boolean;
  /** Its pod ended (succeeded, failed for good, evicted) and its log was read to the end. */
  done: boolean;
  /** A follow ended since the pods were last listed. */
  ended: boolean;
  /** The notes said for its current pod instance, so a slot waiting for its pod says each once. */
  said: Set<string>;
}

/** Kinds that concern the cluster, not one pod: they end the whole follow. */
const FATAL = new Set(['kube-config', 'credential-plugin', 'auth-failed', 'forbidden', 'unreachable', 'kubectl-missing']);

/** A pod state whose containers will not write again. */
function finished(p: RankedPod): boolean {
  return p.state === 'succeeded' || p.state === 'evicted' || (p.state === 'failed' && !p.restarting);
}

/** Whether kubectl can read the container's log now (it was started at least once). */
function readable(p: RankedPod, container: string): boolean {
  const c = p.pod.containers.find((x) => x.name === container);
  if (!c || !p.pod.nodeName) return false;
  return c.state === 'running' || c.state === 'terminated' || c.restarts > 0 || c.last !== undefined;
}

/**
 * Follow (or read) the logs of `job`'s pods, merged in time order with their rank labels (see the file's head).
 * Resolves when every slot is done (or, without follow, when every log was read); rejects with the RemoteRunsError of
 * a failure that concerns the whole cluster, or `cancelled`.
 */
export async function followJobLogs(access: KubectlAccess, whole: Workload, options: JobLogsOptions): Promise<void> {
  const follow = options.follow ?? true;
  const only = options.only;
  const pick = (w: Workload): Workload =>
    only
      ? { ...w, pods: w.pods.filter((x) => x.label === only.label).map((x) => (only.container === undefined ? x : { ...x, pod: { ...x.pod, containers: x.pod.containers.filter((c) => c.name === only.container) } })) }
      : w;
  const job = pick(whole);
  const pollMs = options.pollMs ?? 2000;
  const slots: Slot[] = [];
  for (const p of job.pods) {
    const names = options.containers === 'all' ? p.pod.containers.map((c) => c.name) : [defaultContainer(job, p) ?? p.pod.containers[0]?.name].filter((x): x is string => x !== undefined);
    for (const container of names) slots.push({ label: p.label, container, order: slots.length, pod: p, following: false, done: false, ended: false, said: new Set() });
  }
  if (slots.length === 0) throw new RemoteRunsError('not-found', `Job ${job.namespace}/${job.name} has no pods (${job.state}${job.reason ? `: ${job.reason}` : ''}), so no logs yet`);
  const order = new Map(slots.map((s) => [`${s.label}\0${s.container}`, s.order]));
  const merger = new LogMerger(follow ? (options.delayMs ?? 300) : 0, (l) => order.get(`${l.label}\0${l.container}`) ?? 0);
  const note = (s: Slot, text: string): void => {
    if (s.said.has(text)) return;
    s.said.add(text);
    options.onNote?.(s.label, text);
  };
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let failure: RemoteRunsError | undefined;
  const flush = (all = false): void => {
    for (const l of merger.take(Date.now(), all)) options.onLine(l);
  };
  const flusher = follow ? setInterval(() => flush(), Math.max(20, Math.floor((options.delayMs ?? 300) / 3))) : undefined;

  const read = async (s: Slot): Promise<void> => {
    s.following = true;
    const pod = s.pod.pod;
    const verb = ['logs', pod.name, `--container=${s.container}`, '--timestamps', ...(follow ? ['--follow'] : []), ...(s.lastTime ? [`--since-time=${s.lastTime}`] : [])];
    let pending = '';
    const take = (text: string): void => {
      const t = parseTimestamped(text);
      if (!t) return;
      // --since-time is inclusive: what was shown already is dropped by its time.
      if (s.lastKey !== undefined && t.key <= s.lastKey) return;
      s.lastKey = t.key;
      s.lastTime = t.time;
      merger.push({ label: s.label, container: s.container, pod: pod.name, time: t.time, key: t.key, text: t.text }, Date.now());
    };
    try {
      const r = await runKubectl(access, kubectlArgs(access, verb, { namespace: pod.namespace }), {
        signal: stop.signal,
        keepStdout: false,
        ...(options.env ? { env: options.env } : {}),
        onStdout: (b) => {
          pending += b.toString('utf8');
          const lines = pending.split('\n');
          pending = lines.pop()!;
          for (const l of lines) take(l);
        },
      });
      if (pending) take(pending);
      if (r.code !== 0) {
        const e = kubectlFailure(r, { cluster: access.cluster, pod: { namespace: pod.namespace, pod: pod.name, container: s.container } });
        if (FATAL.has(e.kind)) {
          failure ??= e;
          stop.abort();
        } else note(s, e.message);
      }
    } catch (e) {
      if (!(e instanceof RemoteRunsError && e.kind === 'cancelled') || !stop.signal.aborted) {
        failure ??= e instanceof RemoteRunsError ? e : new RemoteRunsError('internal', String(e));
        stop.abort();
      }
    } finally {
      s.following = false;
      s.ended = true;
    }
  };

  const relist = async (signal: AbortSignal): Promise<Workload | undefined> => {
    if (options.relist) return options.relist(signal);
    const { workloads } = await listClusterTargets(access, { signal, ...(options.env ? { env: options.env } : {}) });
    const now = workloads.find((w) => w.namespace === whole.namespace && w.name === whole.name && w.grouping === whole.grouping);
    return now ? pick(now) : undefined;
  };
  const reads = new Set<Promise<void>>();
  const start = (s: Slot): void => {
    const p = read(s).finally(() => reads.delete(p));
    reads.add(p);
  };
  try {
    for (const s of slots) {
      if (readable(s.pod, s.container)) start(s);
      else note(s, `no log yet: ${s.pod.pod.name} is ${s.pod.state}${s.pod.reason ? ` (${s.pod.reason})` : ''}`);
    }
    if (!follow) {
      await Promise.all([...reads]);
      if (failure) throw failure;
      flush(true);
      return;
    }
    // Follow: whenever a slot is not following, list the job's pods again and follow what now holds its rank.
    while (!stop.signal.aborted) {
      if (slots.every((s) => s.done)) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, pollMs);
        stop.signal.addEventListener('abort', () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
      if (stop.signal.aborted) break;
      const waiting = slots.filter((s) => !s.following && !s.done);
      if (waiting.length === 0) continue;
      let now: Workload | undefined;
      try {
        now = await relist(stop.signal);
      } catch (e) {
        if (stop.signal.aborted) break;
        if (e instanceof RemoteRunsError && FATAL.has(e.kind)) throw e;
        // Tried again at the next poll; said meanwhile (once per message) for each rank that waits on it.
        for (const s of waiting) note(s, `the job's pods could not be listed again: ${e instanceof Error ? e.message : String(e)}`);
        continue;
      }
      for (const s of waiting) {
        const next = now?.pods.find((p) => p.label === s.label);
        if (!next) {
          // The pod is gone and none has its rank yet (being replaced), or the job is gone.
          if (s.ended && now === undefined) s.done = true;
          else note(s, `no pod has this rank now (${s.pod.pod.name} is gone)`);
          continue;
        }
        const replaced = next.pod.name !== s.pod.pod.name || (next.pod.uid !== undefined && s.pod.pod.uid !== undefined && next.pod.uid !== s.pod.pod.uid);
        const c = next.pod.containers.find((x) => x.name === s.container);
        const before = s.pod.pod.containers.find((x) => x.name === s.container);
        const restarted = !replaced && c !== undefined && before !== undefined && c.restarts > before.restarts;
        // A new instance (restarted or replaced) says again what it meets.
        if (replaced || restarted) s.said.clear();
        if (replaced) note(s, `${s.pod.pod.name} was replaced by ${next.pod.name}: following it in this place`);
        else if (restarted) note(s, `${next.pod.name} restarted (${c.restarts} restart${c.restarts === 1 ? '' : 's'})`);
        const wasEnded = s.ended;
        s.pod = next;
        s.ended = false;
        if (c?.state === 'running') start(s);
        // A container that ended: read it to its end once (a new instance's, or one never read), then the slot is done.
        else if (c?.state === 'terminated' && (replaced || restarted || !wasEnded)) start(s);
        else if (finished(next)) s.done = true;
        else note(s, `waiting: ${next.pod.name} is ${next.state}${next.reason ? ` (${next.reason})` : ''}`);
      }
    }
    if (failure) throw failure;
    if (options.signal?.aborted) throw new RemoteRunsError('cancelled', 'cancelled');
  } finally {
    stop.abort();
    await Promise.allSettled([...reads]);
    if (flusher) clearInterval(flusher);
    options.signal?.removeEventListener('abort', onAbort);
    flush(true);
  }
}
