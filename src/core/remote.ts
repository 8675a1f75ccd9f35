/**
 * Remote commands are values: an argv to run inside a target, and a parser for what comes back. One runner
 * (`runCommand`) wraps the argv for the target (`pct exec … --`, `docker exec …`), sends it over an Executor
 * (one shared ssh2 connection in production), and maps container failures to typed errors before parsing.
 */
import { RemoteRunsError, type ExecResult, type TargetRef } from './types';
import { wrapForTarget, classifyTargetFailure } from './targets';
import { fenceSkipper, missingTool, shellRefused, unfence } from './shell/portable';

export type { ExecResult } from './types';

export interface ExecOptions {
  signal?: AbortSignal;
  /** Stop reading (and close the channel) after this many stdout bytes. */
  maxOutputBytes?: number;
  stdin?: Buffer | string;
  /**
   * Each chunk of stdout as it arrives, in order, exactly the bytes that end up in the result's stdout (so a reader
   * can work while the command still runs). Must not throw. An executor may not call it at all.
   */
  onStdout?: (chunk: Buffer) => void;
}

/**
 * Reads a command's stdout while it arrives (RemoteCommand.reader): `push` gets every chunk in order and never
 * throws; `finish` gets the whole result and returns what `parse` would (or throws what it would). When the chunks
 * pushed are not the result's stdout (an executor that does not stream, a command retried), `finish` reads stdout.
 */
export interface OutputReader<T> {
  push(chunk: Buffer): void;
  finish(result: ExecResult): T;
}

/** Runs one shell command line on a host (through its login shell, as sshd does). */
export interface Executor {
  exec(commandLine: string, options?: ExecOptions): Promise<ExecResult>;
}

export interface RemoteCommand<T> {
  /** Argument vector run inside the target; quoted by the runner, never by the caller. */
  argv: string[];
  /** Short description for logs (never holds secrets). */
  describe: string;
  maxOutputBytes?: number;
  stdin?: Buffer | string;
  /** Turns the raw result into a typed value or throws RemoteRunsError. */
  parse(result: ExecResult): T;
  /** Optional: a fresh reader that parses stdout as it arrives (same value as `parse`), for long outputs. */
  reader?(): OutputReader<T>;
}

/** Run a command value inside a target over an executor. */
export async function runCommand<T>(
  executor: Executor,
  target: TargetRef,
  command: RemoteCommand<T>,
  signal?: AbortSignal,
): Promise<T> {
  const line = wrapForTarget(target, command.argv);
  const reader = command.reader?.();
  const skip = reader ? fenceSkipper((chunk) => reader.push(chunk)) : undefined;
  const raw = await executor.exec(line, {
    signal,
    // What the login shell's rc files print before FENCE does not count against the command's own budget.
    ...(command.maxOutputBytes !== undefined ? { maxOutputBytes: command.maxOutputBytes + RC_NOISE_BYTES } : {}),
    stdin: command.stdin,
    ...(skip ? { onStdout: skip } : {}),
  });
  // kubectl that never ran the command (no FENCE) is named before it could be taken for a login shell's refusal.
  const kubectl = target.kind === 'pod' ? classifyTargetFailure(target, raw) : undefined;
  if (kubectl) throw kubectl;
  const refused = shellRefused(raw);
  if (refused) throw refused;
  const result = capped(unfence(raw), command.maxOutputBytes);
  const failure = classifyTargetFailure(target, result);
  if (failure) throw failure;
  const tool = missingTool(result);
  if (tool) {
    throw new RemoteRunsError('command-failed', `The remote side has no \`${tool}\`, which "${command.describe}" needs: install it (GNU coreutils/findutils, or BusyBox)`, {
      exitCode: result.code ?? -1,
      stderr: firstStderrLine(result),
    });
  }
  return reader ? reader.finish(result) : command.parse(result);
}

function capped(result: ExecResult, max: number | undefined): ExecResult {
  if (max === undefined || result.stdout.length <= max) return result;
  return { ...result, stdout: result.stdout.subarray(0, max), truncated: true };
}

/** Bytes an rc file may print before FENCE on top of a command's maxOutputBytes. */
const RC_NOISE_BYTES = 64 * 1024;

/** First non-empty line of stderr, for error messages. */
export function firstStderrLine(result: ExecResult): string {
  return (
    result.stderr
      .toString('utf8')
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l.length > 0) ?? ''
  );
}

/** The generic failure for a command that exited non-zero for a reason we do not recognise. */
export function commandFailed(describe: string, result: ExecResult): RemoteRunsError {
  const line = firstStderrLine(result);
  const status = result.code === null ? `signal ${result.signal ?? '?'}` : `exit code ${result.code}`;
  return new RemoteRunsError('command-failed', `${describe} failed with ${status}${line ? `: ${line}` : ''}`, {
    exitCode: result.code ?? -1,
    stderr: line,
  });
}
