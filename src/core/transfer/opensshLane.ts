/**
 * The OpenSSH lane: byte ranges as `ssh` streams on an OpenSshSession's shared master connection (opensshSession.ts
 * says how that login is made), through the target's prefix.
 */
import { commandFailed } from '../remote';
import { classifyTargetFailure, wrapForTarget } from '../targets';
import { RemoteRunsError, type TargetRef } from '../types';
import { rangeArgvOf, type Lane, type RangeHashes, type RangeJob, type WriteFn } from './lanes';
import { classifySshFailure, type OpenSshSession } from './opensshSession';
import { childSource, runStream, type StreamEnd } from './stream';

/**
 * A lane whose bytes come through the OpenSSH session: one `ssh` stream per range, through the target's prefix,
 * its stdout a pipe into this process, which writes the bytes at their position. ssh never writes the `.part`
 * itself: a stream whose owner died would otherwise go on appending to a file the next download resumes, and an
 * `ssh` whose reader is gone dies of the broken pipe at its next write.
 */
export class OpenSshLane implements Lane {
  constructor(
    private readonly session: OpenSshSession,
    private readonly target: TargetRef,
  ) {}

  async fetch(job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
    if (signal.aborted) throw new RemoteRunsError('cancelled', 'Download cancelled');
    const line = wrapForTarget(this.target, rangeArgvOf(job));
    return this.piped(line, job, write, signal);
  }

  private piped(line: string, job: RangeJob, write: WriteFn, signal: AbortSignal): Promise<RangeHashes | undefined> {
    const child = this.session.run(line);
    return runStream(childSource(child, (end) => this.failure(job, end)), job, write, signal);
  }

  /** Turn the stream's end into the error it means (undefined: it exited 0). */
  private failure(job: RangeJob, end: StreamEnd): RemoteRunsError | undefined {
    const { code, stderr } = end;
    const ssh = classifySshFailure(stderr, code);
    if (ssh) return ssh;
    if (code !== 0) {
      const result = { stdout: Buffer.alloc(0), stderr: Buffer.from(stderr), code, ...(end.signal ? { signal: end.signal } : {}), truncated: false };
      return classifyTargetFailure(this.target, result) ?? commandFailed(`Streaming ${job.remotePath}`, result);
    }
    return undefined;
  }

  close(): void {
    // The session is the download's: it is disposed there, once, after every lane.
  }
}
