/**
 * A transfer worker thread: one sibling SSH connection and one lane (lanes.ts) that fetches the byte ranges the
 * download hands it and writes them into the `.part` file itself, reporting what is on disk. Decrypting and
 * writing in a thread of its own is what lets a download use more than one core; the download (download.ts) keeps
 * planning, resume records, verification and cancel in the main thread.
 *
 * It logs in exactly like ConnectionPool.connectSibling: the same settings and known_hosts files, the secrets the
 * shared connection already unlocked, and a prompter that refuses everything, so it can never ask the user or
 * accept a host key the user has not accepted. Built as dist/transferWorker.js (esbuild.mjs); from source it runs
 * through tsx (workerLane.ts).
 */
import { localFs as fs, type FileHandle } from '../util/localFs';
import { parentPort, workerData } from 'node:worker_threads';
import { utils } from 'ssh2';
import { SecretStore } from '../ssh/auth';
import { SshConnection } from '../ssh/connection';
import { NEVER_PROMPT } from '../ssh/pool';
import { RemoteRunsError, isRemoteRunsError } from '../types';
import { createLane, type Lane, type RangeJob } from './lanes';
import { localError } from './localErrors';
import type { ErrorData, FromWorker, ToWorker, WorkerInit } from './workerProtocol';

/** Report written ranges at least this often (bytes), so progress and the resume record stay current. */
const REPORT_BYTES = 4 << 20;
const REPORT_MS = 100;

const port = parentPort;
if (!port) throw new Error('transferWorker runs only as a worker thread');
const init = workerData as WorkerInit;
const post = (m: FromWorker): void => port.postMessage(m);
const logger = {
  info: (message: string) => post({ type: 'log', level: 'info', message }),
  warn: (message: string) => post({ type: 'log', level: 'warn', message }),
  error: (message: string) => post({ type: 'log', level: 'error', message }),
};
const stop = new AbortController();

function errorData(e: unknown): ErrorData {
  const err = isRemoteRunsError(e) ? e : new RemoteRunsError('protocol', e instanceof Error ? e.message : String(e));
  return { kind: err.kind, message: err.message, detail: { ...err.detail } };
}

/** The secrets of the main thread's pool, per hop, in a SecretStore of our own. */
function secretsFromInit(): SecretStore {
  const secrets = new SecretStore();
  [...init.host.jumps, init.host.target].forEach((hop, i) => {
    const data = init.hops[i];
    if (!data) return;
    const s = secrets.for(hop);
    if (data.password !== undefined) s.password = data.password;
    for (const [path, text] of data.keys) {
      const parsed = utils.parseKey(text);
      const key = Array.isArray(parsed) ? parsed[0] : parsed;
      if (key && !(key instanceof Error)) s.keys.set(path, key);
    }
  });
  return secrets;
}

async function runJob(lane: Lane, id: number, job: RangeJob & { partPath: string }): Promise<void> {
  let ranges: number[] = [];
  let bytes = 0;
  let last = Date.now();
  const flush = (): void => {
    if (ranges.length === 0) return;
    post({ type: 'wrote', id, ranges });
    ranges = [];
    bytes = 0;
    last = Date.now();
  };
  // Writes still running when the range fails (a dropped connection) land on disk afterwards: wait for them and
  // report them too, so a retry does not fetch those bytes again.
  let writing = 0;
  let idle: (() => void) | undefined;
  let fh: FileHandle | undefined;
  try {
    fh = await fs.open(job.partPath, 'r+').catch((e: unknown) => {
      throw localError(e, `Cannot open ${job.partPath}`);
    });
    const file = fh;
    const hashes = await lane.fetch(
      job,
      async (position, data) => {
        writing++;
        try {
          await file.write(data, 0, data.length, position);
        } catch (e) {
          throw localError(e, `Cannot write ${job.partPath}`);
        } finally {
          if (--writing === 0) idle?.();
        }
        const n = ranges.length;
        if (n >= 2 && ranges[n - 2] + ranges[n - 1] === position) ranges[n - 1] += data.length;
        else ranges.push(position, data.length);
        bytes += data.length;
        if (bytes >= REPORT_BYTES || Date.now() - last >= REPORT_MS) flush();
      },
      stop.signal,
    );
    flush();
    post({ type: 'done', id, ...(hashes ? { hashes } : {}) });
  } catch (e) {
    if (writing > 0) await new Promise<void>((r) => (idle = r));
    flush();
    post({ type: 'error', id, error: errorData(e) });
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

async function main(): Promise<void> {
  let conn: SshConnection;
  try {
    conn = await SshConnection.connect(init.host, { ...init.settings, prompter: NEVER_PROMPT, logger, secrets: secretsFromInit(), signal: stop.signal });
  } catch (e) {
    post({ type: 'failed', error: errorData(e) });
    port!.close();
    return;
  }
  const lane = createLane(init.transport, conn, init.target, true);
  port!.on('message', (m: ToWorker) => {
    if (m.type === 'fetch') return void runJob(lane, m.id, m.job);
    // Stop: abort every range at once, which stops the channels (TERM to remote commands) and closes the connection.
    stop.abort();
    lane.close();
    port!.close();
  });
  post({ type: 'ready' });
}

void main();
