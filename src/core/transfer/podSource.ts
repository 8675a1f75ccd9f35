/**
 * A checkpoint download from a pod container: the same download as over SSH (plan, lock, records, resume, byte
 * ranges, SHA-256 on both sides), its remote commands run by the container's PodExecutor and each byte range one
 * `kubectl … exec -i POD -c CONTAINER -- sh -c LINE` process on this machine, its argv built by that same
 * executor's argsFor (kube/executor.ts: the one wrapping of a pod's command line).
 *
 * - **Nothing outlives its owner.** Every kubectl of a download (streams and commands alike) is started through the
 *   one process starter in a process group of its own, held by a lifeline (util/lifeline.ts): when this process
 *   dies, however it dies, the lifeline kills them. The download's lock names the streams' lifeline, so a download
 *   that takes the lock over after a crash waits until nothing of the dead one can still write into a `.part`.
 * - **The remote side.** A process started by `kubectl exec` is not killed when kubectl dies (the kubelet only closes
 *   its pipes): a `cat`/`dd` of a range then ends at its next write (SIGPIPE). What ends a remote command whose
 *   output is no longer read at all is the pod command wrapping's (PodExecutor.argsFor), shared by every pod command.
 * - **Direct writes.** kubectl's stdout may be the `.part` itself (transfer/opensshLane.ts direct and placed), as an
 *   OpenSSH master's is: the attempt owns these streams and close() waits until every kubectl of them has exited,
 *   so nothing writes into a `.part` once the attempt is over.
 */
import { Lifeline } from '../util/lifeline';
import { signalProcess, startProcess, type ChildProcess, type ProcessHolder } from '../util/processes';
import { kubectlProgram, type KubectlAccess } from '../kube/kubectl';
import { PodExecutor } from '../kube/executor';
import { parsePodTargetId, podTarget, type PodContainer } from '../kube/names';
import { RemoteRunsError } from '../types';
import type { ClosableStreams, PodTransferSource } from './types';

/**
 * The transfer source of a pod container of the cluster `name`: what the CLI's `pull` and the extension's Download
 * Checkpoint hand to pullCheckpoint for a `pod` target (service.ts transferSource builds it from a configured cluster).
 */
export function podTransferSource(name: string, access: KubectlAccess, pod: PodContainer | string): PodTransferSource {
  const container = typeof pod === 'string' ? parsePodTargetId(pod) : pod;
  const holder = new LifelineWhileRunning();
  const executor = new PodExecutor(access, container, holder);
  return {
    kind: 'pod',
    name,
    target: podTarget(container),
    executor,
    openStreams: () => new PodStreams(kubectlProgram(access), (line) => executor.argsFor(line)),
  };
}

/**
 * The byte streams of one attempt in a pod container: each `run` starts a kubectl exec of its own (stdout a pipe, or
 * a `.part` placed at an offset), held by this attempt's lifeline from its start until it exits.
 */
export class PodStreams implements ClosableStreams {
  readonly directWrites = true;
  private readonly lifeline = new Lifeline();
  private readonly children = new Set<ChildProcess>();
  private closed = false;

  constructor(
    private readonly program: string,
    private readonly argsFor: (line: string) => string[],
  ) {}

  get lifelinePid(): number | undefined {
    return this.lifeline.pid;
  }

  run(line: string, stdout?: number, stdoutAt?: number): ChildProcess {
    if (this.closed) throw new RemoteRunsError('cancelled', 'Transfer closed');
    // stdin: a pipe held open and never written, the remote command's lifeline (kube/lifeline.ts: the range read ends
    // when kubectl's stdin does, so a kubectl killed with this process leaves no `cat` in the container); it closes
    // when kubectl exits. Its own process group, as every kubectl (kube/kubectl.ts runKubectl): a stop reaches a
    // credential plugin too.
    const child = startProcess(this.program, this.argsFor(line), {
      stdio: ['pipe', stdout ?? 'pipe', 'pipe'],
      detached: true,
      holder: this.lifeline,
      running: this.children,
      ...(stdout !== undefined && stdoutAt !== undefined ? { stdoutAt } : {}),
    });
    child.stdin?.on('error', () => undefined);
    return child;
  }

  /** Kill every stream still running, wait until each has exited, and let the lifeline go. */
  async close(): Promise<void> {
    this.closed = true;
    const left = [...this.children].filter((c) => c.exitCode === null && c.signalCode === null);
    const gone = left.map((c) => new Promise<void>((resolve) => {
      if (c.exitCode !== null || c.signalCode !== null) resolve();
      else c.once('exit', () => resolve());
    }));
    for (const c of left) signalProcess(c, 'SIGKILL', { group: true });
    await Promise.all(gone);
    this.lifeline.close();
  }
}

/**
 * A holder for the short kubectl commands of a download (listing, stats, hashes): a lifeline while any runs, none
 * left behind when none does (a download that ends leaves no process of ours waiting).
 */
class LifelineWhileRunning implements ProcessHolder {
  private lifeline: Lifeline | undefined;
  private readonly pids = new Set<number>();

  add(pid: number | undefined): void {
    if (!pid) return;
    this.pids.add(pid);
    (this.lifeline ??= new Lifeline()).add(pid);
  }

  remove(pid: number | undefined): void {
    if (!pid || !this.pids.delete(pid)) return;
    this.lifeline?.remove(pid);
    if (this.pids.size === 0) {
      this.lifeline?.close();
      this.lifeline = undefined;
    }
  }
}
