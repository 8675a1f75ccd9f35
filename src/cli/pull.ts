import * as readline from 'node:readline';
import type { RemoteRunsCore } from '../core/service';
import { pickCheckpointWithNote, type PickedCheckpoint } from '../core/service';
import { checkpointToPull, partialPercent, progressText, pullCheckpoint, skippedLines, type DownloadProgress, type PlanFile, type TransferSource, type VerifyMode, type ClientChoice, type SkippedEntry } from '../core/transfer';
import { RemoteRunsError, formatTarget, type TargetRef } from '../core/types';
import { formatBytes } from '../core/util/format';
import type { parseAddress } from '../core/address';
import { displayText } from '../shared/display';
import { rawStream } from './output';

export interface PullDeps {
  core: RemoteRunsCore;
  /** Where the checkpoint's bytes come from (main.ts downloadSource: a host's pooled links; a pod's: kubepull). */
  source(hostName: string, target: TargetRef): TransferSource;
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
  stdin: NodeJS.ReadStream;
  signal: AbortSignal;
}

/**
 * `remote-runs pull host/target/run/checkpoint|latest [--to DIR] [--verify] [--size-only] [--force]`: progress on
 * stderr, the local path on stdout. A local file that differs is replaced with --force, or when a terminal can ask
 * and the answer is yes.
 */
export async function pullCommand(
  deps: PullDeps,
  addr: ReturnType<typeof parseAddress>,
  options: { to: string; verify: VerifyMode; recheck?: boolean; force?: boolean; client?: ClientChoice; sshPath?: string; onPicked?: (picked: PickedCheckpoint) => void; onSkipped?: (skipped: SkippedEntry[]) => void },
): Promise<string> {
  if (!addr.target || addr.run === undefined || addr.checkpoint === undefined) {
    throw new RemoteRunsError('bad-address', 'pull needs host/target/run/checkpoint (a checkpoint name such as step_20000 or last.ckpt, a step, last/best, final, or "latest")');
  }
  // Only the picked checkpoint outlives this step (checkpointToPull): the run's listing is not held for the whole pull.
  const { target, run: runName, checkpoint: which } = addr;
  const { run, checkpoint } = await (async () => {
    const found = await deps.core.resolveRun(addr.host, target, addr.segments ?? [runName, which], 'required', deps.signal);
    const picked = pickCheckpointWithNote(found.run, found.checkpoint ?? which, found.listedInPart);
    if (picked.note) deps.stderr.write(`${picked.note}\n`);
    options.onPicked?.(picked);
    return { run: { name: found.run.name }, checkpoint: checkpointToPull(picked.checkpoint) };
  })();
  const source = deps.source(addr.host, addr.target);
  const where = `${addr.host}/${formatTarget(addr.target)}/${run.name}/${checkpoint.name}`;
  const progress = progressPrinter(deps.stderr, where);
  const outcome = await pullCheckpoint(source, checkpoint, { root: options.to, run: run.name }, {
    signal: deps.signal,
    verify: options.verify,
    recheck: options.recheck,
    force: options.force,
    client: options.client,
    sshPath: options.sshPath,
    holder: 'remote-runs pull',
    onProgress: progress.update,
    overwrite: (file) => askOverwrite(deps, file),
  }, (plan) => {
    for (const line of skippedLines(plan)) deps.stderr.write(`${where}: ${line}\n`);
    options.onSkipped?.(plan.skipped);
    // An interrupted pull (or window) left bytes of these files: say so before continuing from them.
    const here = plan.files.reduce((n, f) => n + (f.state.kind === 'partial' ? f.state.bytes : f.state.kind === 'complete-verified' ? f.bytes : 0), 0);
    if (plan.files.some((f) => f.state.kind === 'partial') && here > 0) {
      deps.stderr.write(`${where}: resuming an interrupted download, ${partialPercent(here, plan.bytes)} here (${formatBytes(here)} of ${formatBytes(plan.bytes)})\n`);
    }
  });
  progress.done();
  const { declined } = outcome;
  if (declined.length) {
    throw new RemoteRunsError(
      'exists',
      `Kept the local file${declined.length > 1 ? 's' : ''} that differ${declined.length > 1 ? '' : 's'} from the remote: ${declined.map((f) => f.localPath).join(', ')} (nothing was overwritten; --force replaces ${declined.length > 1 ? 'them' : 'it'})`,
    );
  }
  deps.stderr.write(`${where}: ${outcome.summary}\n`);
  return outcome.result.localRoot;
}

async function askOverwrite(deps: PullDeps, file: PlanFile): Promise<boolean> {
  if (!deps.stdin.isTTY) {
    deps.stderr.write(`${file.localPath} exists and differs from the remote file; not replaced without a terminal to ask (--force replaces it)\n`);
    return false;
  }
  // readline draws the line it edits with controls of its own: it writes to the raw stream, the question shown.
  const rl = readline.createInterface({ input: deps.stdin, output: rawStream(deps.stderr) });
  const answer = await new Promise<string>((resolve) => rl.question(displayText(`${file.localPath} exists and differs. Replace it (y/N)? `), resolve));
  rl.close();
  return /^y(es)?$/i.test(answer.trim());
}

function progressPrinter(out: NodeJS.WritableStream & { isTTY?: boolean }, label: string) {
  let last = 0;
  let lastLine = '';
  const line = (p: DownloadProgress): string => `${label}: ${progressText(p)}`;
  return {
    update(p: DownloadProgress): void {
      const now = Date.now();
      if (now - last < (out.isTTY ? 200 : 2000)) return;
      last = now;
      lastLine = line(p);
      // The program's own return-and-erase goes to the raw stream; the line (remote names) through the display.
      if (out.isTTY) rawStream(out).write('\r\x1b[K');
      out.write(out.isTTY ? lastLine : `${lastLine}\n`);
    },
    done(): void {
      if (out.isTTY && lastLine) out.write('\n');
    },
  };
}
