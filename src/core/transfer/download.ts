/**
 * Carry out a DownloadPlan: byte ranges over several lanes into `NAME.part` files, a sidecar recording what is
 * written and which remote version it came from, automatic retries with backoff after a dropped connection,
 * verification (size always, SHA-256 on both sides on request), and only then a rename to the real name.
 * A file that looks complete is therefore always complete.
 */
import { promises as fs, type Stats } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCommand } from '../remote';
import { RemoteRunsError, isRemoteRunsError } from '../types';
import { delay } from '../util/delay';
import { createLane, type Lane } from './lanes';
import { OpenSshLane } from './opensshLane';
import { OpenSshSession, OpenSshUnsupported } from './opensshSession';
import { localError } from './localErrors';
import { startWorkerLane, workerInit } from './workerLane';
import { sha256File } from './localHash';
import { SpeedMeter } from './progress';
import { RangeSet, splitRanges, type ByteRange } from './ranges';
import { doneRecordPath, overwriteJsonInPlace, partPath, partRecordPath, readDoneRecord, readPartRecord, writeJsonAtomic, type DoneRecord, type PartRecord } from './records';
import { sha256Command, statCheckpointCommand, type RemoteFileStat } from './remoteCommands';
import type { DownloadOptions, DownloadPlan, DownloadResult, FileOutcome, PlanFile, TransportKind } from './types';

/** One file being fetched, with its mutable transfer state. */
interface Work {
  file: PlanFile;
  index: number;
  /** The remote version being fetched (may be newer than the plan's if it changed). */
  bytes: number;
  mtime: number;
  done: RangeSet;
  resumedBytes: number;
  refetchedBytes: number;
  handle?: Promise<fs.FileHandle>;
  dirty: boolean;
  outcome: FileOutcome['outcome'];
  sha256?: string;
  finished: boolean;
}

const SIDECAR_INTERVAL_MS = 1000;
/** A .part's record is padded to a multiple of this, so a full disk can still take its updates (saveSidecar). */
const SIDECAR_RESERVE_BYTES = 1024;
const PROGRESS_INTERVAL_MS = 200;
/**
 * Below this many bytes to fetch, sibling lanes stay in this thread: a worker's start (loading its bundle, its own
 * login) costs more than spreading a few seconds of decryption over another core saves.
 */
const THREADS_MIN_BYTES = 64 << 20;
/**
 * Worker threads only pay where there are cores to spare: on 2 cores (bench/transfer.ts, quiet machine, 512 MiB)
 * 4 lanes in threads took 13.2 CPU s/GiB against 5.6 in one thread and moved 0.43x of scp's throughput against
 * 0.66x, every thread's decryption competing with sshd and the others for the same two cores.
 */
const THREADS_MIN_CORES = 4;
/** A remote file that keeps changing under us is reported instead of fetched forever. */
const MAX_CHANGED_RESTARTS = 2;

/**
 * Download the files of a plan. Resolves with what happened to each file; rejects with RemoteRunsError:
 * `cancelled` (the `.part` files and their sidecars stay for the next call), `disk-full`, `verify-failed`
 * (the `.part` is kept), `changed`, or the connection and container kinds once retries are exhausted.
 */
export async function download(plan: DownloadPlan, options: DownloadOptions = {}): Promise<DownloadResult> {
  const { source } = plan;
  const signal = options.signal;
  const transport: TransportKind = options.transport ?? (source.target.kind === 'host' ? 'sftp' : 'exec');
  const verify = options.verify ?? 'size';
  const outcomes: FileOutcome[] = [];
  const works: Work[] = [];
  throwIfCancelled(signal);

  for (const [i, file] of plan.files.entries()) {
    const base = { relative: file.relative, localPath: file.localPath, resumedBytes: 0, refetchedBytes: 0 };
    if (file.state.kind === 'complete-verified') {
      // Already here. Asked for a checksum it was not verified with: hash both sides rather than fetch again.
      const sha256 = verify === 'sha256' && file.state.verified !== 'sha256' ? await verifyExisting(plan, file, signal) : file.state.sha256;
      const verified = sha256 ? 'sha256' : file.state.verified;
      outcomes.push({ ...base, outcome: 'already-complete', verified, ...(sha256 ? { sha256 } : {}) });
      continue;
    }
    if (file.state.kind === 'differs') {
      const ok = options.overwrite ? await options.overwrite(file) : false;
      throwIfCancelled(signal);
      if (!ok) {
        outcomes.push({ ...base, outcome: 'declined' });
        continue;
      }
    }
    works.push(await prepare(file, i, options.fresh === true));
  }

  await checkDiskSpace(works);

  let bytesFetched = 0;
  let retries = 0;
  let lanesUsed = 0;
  const clientState: ClientState = { choice: options.client ?? 'auto', used: 'ssh2' };
  const meter = new SpeedMeter();
  const totalBytes = works.reduce((n, w) => n + w.bytes, 0);
  let lastFile = works[0];
  let lastProgress = 0;
  const report = (force: boolean, phase: 'transfer' | 'verify' = 'transfer'): void => {
    const now = Date.now();
    meter.sample(now, bytesFetched);
    if (!options.onProgress || (!force && now - lastProgress < PROGRESS_INTERVAL_MS)) return;
    lastProgress = now;
    const done = works.reduce((n, w) => n + w.done.total, 0);
    options.onProgress({
      bytesDone: done,
      bytesTotal: totalBytes,
      bytesPerSec: meter.bytesPerSec,
      etaSec: meter.eta(totalBytes - done),
      fileIndex: lastFile ? lastFile.index + 1 : 0,
      fileCount: plan.files.length,
      file: lastFile?.file.relative ?? '',
      phase,
    });
  };

  try {
    let changedRestarts = 0;
    for (let attempt = 0; ; attempt++) {
      const pendingWork = works.filter((w) => !w.finished);
      if (pendingWork.length === 0) break;
      try {
        // The remote files as they are now: a change since the .part was started means starting that file over.
        const now = await statRemote(plan, signal);
        for (const w of pendingWork) {
          const st = now.get(w.file.relative);
          if (!st) throw new RemoteRunsError('path-missing', `${w.file.remotePath} no longer exists on the remote side`, { path: w.file.remotePath });
          if (st.bytes !== w.bytes || st.mtime !== w.mtime) {
            if (++changedRestarts > MAX_CHANGED_RESTARTS * works.length) {
              throw new RemoteRunsError('changed', `${w.file.remotePath} keeps changing while it is downloaded; try again when the run has finished writing it`, { path: w.file.remotePath });
            }
            await restartFile(w, st);
          }
        }
        report(true);
        const used = await runAttempt(plan, pendingWork, transport, options, clientState, signal, (w, n) => {
          bytesFetched += n;
          lastFile = w;
          report(false);
        });
        lanesUsed = Math.max(lanesUsed, used);
        // Everything is on disk: check the remote side did not change meanwhile, verify, and only then rename.
        const after = await statRemote(plan, signal);
        for (const w of pendingWork) {
          const st = after.get(w.file.relative);
          if (!st || st.bytes !== w.bytes || st.mtime !== w.mtime) {
            if (++changedRestarts > MAX_CHANGED_RESTARTS * works.length) {
              throw new RemoteRunsError('changed', `${w.file.remotePath} changed while it was downloaded, again; try again when the run has finished writing it`, { path: w.file.remotePath });
            }
            if (!st) throw new RemoteRunsError('path-missing', `${w.file.remotePath} disappeared while it was downloaded`, { path: w.file.remotePath });
            await restartFile(w, st);
            continue;
          }
          lastFile = w;
          report(true, 'verify');
          await finish(plan, w, verify, signal);
        }
      } catch (e) {
        await Promise.all(works.map(saveSidecar));
        const err = isRemoteRunsError(e) ? e : new RemoteRunsError('protocol', e instanceof Error ? e.message : String(e));
        if ((err.kind === 'changed' || err.kind === 'command-failed') && !signal?.aborted) await throwIfGone(plan, works, signal);
        if (err.kind !== 'unreachable' || signal?.aborted || attempt >= (options.retries ?? 5)) throw signal?.aborted ? cancelled() : err;
        retries++;
        await delay((options.backoffBaseMs ?? 500) * 2 ** attempt, signal, cancelled);
      }
    }
  } finally {
    await Promise.all(works.map(closeHandle));
  }

  for (const w of works) {
    outcomes.push({
      relative: w.file.relative,
      localPath: w.file.localPath,
      outcome: w.outcome,
      verified: verify,
      ...(w.sha256 ? { sha256: w.sha256 } : {}),
      resumedBytes: w.resumedBytes,
      refetchedBytes: w.refetchedBytes,
    });
  }
  const order = new Map(plan.files.map((f, i) => [f.relative, i]));
  outcomes.sort((a, b) => (order.get(a.relative) ?? 0) - (order.get(b.relative) ?? 0));
  return {
    localRoot: plan.localRoot,
    files: outcomes,
    bytesFetched,
    retries,
    lanes: lanesUsed,
    transport: clientState.used === 'openssh' ? 'exec' : transport,
    client: clientState.used,
    ...(clientState.note ? { clientNote: clientState.note } : {}),
  };
}

/** The client choice of one download, across its attempts. */
interface ClientState {
  choice: 'auto' | 'openssh' | 'ssh2';
  used: 'openssh' | 'ssh2';
  /** Why auto fell back to ssh2. */
  note?: string;
}

/**
 * Hosts where `auto` found OpenSSH unusable (no binary, no key login), per pool: later downloads go straight to
 * ssh2 instead of trying again each time. A host whose settings change gets a new pool entry and is tried again.
 */
const openSshRefused = new WeakMap<object, Map<string, string>>();

/**
 * The OpenSSH session for an attempt, or undefined for ssh2: `auto` falls back (and says why in the logger and the
 * result), `openssh` fails with the reason.
 */
async function openSshFor(plan: DownloadPlan, hostKeys: Buffer[], options: DownloadOptions, state: ClientState, signal?: AbortSignal): Promise<OpenSshSession | undefined> {
  if (state.choice === 'ssh2') return undefined;
  const { pool, host } = plan.source;
  const refused = openSshRefused.get(pool) ?? new Map<string, string>();
  openSshRefused.set(pool, refused);
  const key = JSON.stringify([host.name, host.jumps, host.target]);
  const known = refused.get(key);
  if (known && state.choice === 'auto') {
    state.note = known;
    return undefined;
  }
  const login = pool.siblingLogin(host);
  const agent = login.settings.agent === null ? undefined : (login.settings.agent ?? process.env.SSH_AUTH_SOCK);
  try {
    return await OpenSshSession.start({ login, hostKeys, agent }, { sshPath: options.sshPath, signal });
  } catch (e) {
    if (isRemoteRunsError(e) && e.kind === 'cancelled') throw e;
    // The host showed OpenSSH another key than the one the pool's connection trusted: a new connection would not be
    // talking to the same machine. Never quietly carry on over the old connection: stop and say so.
    if (isRemoteRunsError(e) && e.kind === 'host-key-mismatch') {
      throw new RemoteRunsError('host-key-mismatch', `${host.name} presented a different host key to a new connection than to the open one; the download was stopped. ${e.message}`, e.detail);
    }
    const why = e instanceof Error ? e.message : String(e);
    if (state.choice === 'openssh') {
      throw isRemoteRunsError(e) ? e : new RemoteRunsError('bad-config', `Cannot download with OpenSSH: ${why}`);
    }
    // A reason that will not change by itself (no binary, no key login, a refused login) is remembered.
    if (e instanceof OpenSshUnsupported || (isRemoteRunsError(e) && e.kind === 'auth-failed')) refused.set(key, why);
    state.note = why;
    options.logger?.warn(`Downloading from ${host.name} with ssh2 instead of OpenSSH: ${why}`);
    return undefined;
  }
}

/** Set up a file's `.part` state: keep the ranges of a matching sidecar, discard anything else. */
async function prepare(file: PlanFile, index: number, fresh: boolean): Promise<Work> {
  await fs.mkdir(path.dirname(file.localPath), { recursive: true }).catch((e: unknown) => {
    throw localError(e, `Cannot create ${path.dirname(file.localPath)}`);
  });
  const w: Work = {
    file,
    index,
    bytes: file.bytes,
    mtime: file.mtime,
    done: new RangeSet(),
    resumedBytes: 0,
    refetchedBytes: 0,
    dirty: true,
    outcome: 'downloaded',
    finished: false,
  };
  const partStat = await fs.stat(partPath(file.localPath)).catch(() => undefined);
  const rec = partStat ? await readPartRecord(file.localPath) : undefined;
  if (partStat && rec && !fresh && rec.remotePath === file.remotePath && rec.remoteBytes === file.bytes && rec.remoteMtime === file.mtime) {
    w.done = new RangeSet(rec.done.map(([s, e]) => [s, Math.min(e, partStat.size)] as const));
    w.resumedBytes = w.done.total;
    if (w.resumedBytes > 0) w.outcome = 'resumed';
  } else if (partStat) {
    // A .part of another version (or no record of where it came from): those bytes are worth nothing.
    w.refetchedBytes += rec && rec.remoteBytes === file.bytes ? new RangeSet(rec.done).total : 0;
    await fs.rm(partPath(file.localPath), { force: true });
  }
  return w;
}

/**
 * A file deleted under a range read shows up as a short or failed read (`changed`, `command-failed`): if it is gone
 * now, say that (`path-missing`) instead. Any other outcome of the check leaves the original error standing.
 */
async function throwIfGone(plan: DownloadPlan, works: Work[], signal?: AbortSignal): Promise<void> {
  let now: Map<string, RemoteFileStat>;
  try {
    now = await statRemote(plan, signal);
  } catch (e) {
    if (isRemoteRunsError(e) && e.kind === 'path-missing') throw e; // the whole checkpoint is gone
    return;
  }
  for (const w of works) {
    if (!w.finished && !now.get(w.file.relative)) {
      throw new RemoteRunsError('path-missing', `${w.file.remotePath} disappeared while it was downloaded`, { path: w.file.remotePath });
    }
  }
}

/** The remote file changed: throw away what we have of it and fetch the new version from zero. */
async function restartFile(w: Work, st: RemoteFileStat): Promise<void> {
  w.refetchedBytes += w.done.total;
  w.resumedBytes = 0;
  w.outcome = 'downloaded';
  w.done = new RangeSet();
  w.bytes = st.bytes;
  w.mtime = st.mtime;
  w.dirty = true;
  await closeHandle(w);
  await fs.rm(partPath(w.file.localPath), { force: true });
  await saveSidecar(w);
}

async function statRemote(plan: DownloadPlan, signal?: AbortSignal): Promise<Map<string, RemoteFileStat>> {
  const { source, checkpoint } = plan;
  const stats = await runCommand(source.pool.executor(source.host, { idempotent: true }), source.target, statCheckpointCommand(checkpoint.path), signal);
  const map = new Map<string, RemoteFileStat>();
  for (const s of stats) map.set(checkpoint.isDir ? s.relative : checkpoint.name, s);
  return map;
}

/**
 * One attempt: open the lanes, hand out the missing ranges (largest file first, each cut so every lane has
 * work), and write what arrives. Returns the number of lanes used; rejects on the first lane failure after
 * stopping the others.
 */
async function runAttempt(
  plan: DownloadPlan,
  works: Work[],
  transport: TransportKind,
  options: DownloadOptions,
  clientState: ClientState,
  signal: AbortSignal | undefined,
  onBytes: (w: Work, n: number) => void,
): Promise<number> {
  const { source } = plan;
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort();
  signal?.addEventListener('abort', onOuterAbort, { once: true });
  const lease = await source.pool.acquire(source.host, signal);
  let openssh: OpenSshSession | undefined;
  try {
    openssh = await openSshFor(plan, lease.connection.hostKeys, options, clientState, signal);
  } catch (e) {
    signal?.removeEventListener('abort', onOuterAbort);
    lease.dispose();
    throw e;
  }
  clientState.used = openssh ? 'openssh' : 'ssh2';
  const lanes: Lane[] = [openssh ? new OpenSshLane(openssh, source.target) : createLane(transport, lease.connection, source.target, false)];
  // The record exists (with room to spare) before the first byte: a disk that fills up at once can still take it.
  await Promise.all(works.map(saveSidecar));
  const sidecarTimer = setInterval(() => void Promise.all(works.map(saveSidecar)), SIDECAR_INTERVAL_MS);
  try {
    const remaining = works.reduce((n, w) => n + (w.bytes - w.done.total), 0);
    // OpenSSH: one stream per file (ssh writes it straight to the .part), files side by side on the one connection.
    const wanted = openssh
      ? Math.max(1, Math.min(options.concurrency ?? 4, works.length))
      : Math.max(1, Math.min(options.concurrency ?? 4, Math.ceil(remaining / (8 << 20)) || 1));
    // Siblings reuse the pool's secrets and never prompt; a host that would need a prompt gets fewer lanes. Each
    // runs in a worker thread of its own (decrypting and writing off this thread, on another core), or here when
    // threads are off or a worker cannot start.
    const threads = options.threads ?? (remaining >= THREADS_MIN_BYTES && os.availableParallelism() >= THREADS_MIN_CORES);
    const init = wanted > 1 && threads && !openssh ? workerInit(source.pool, source.host, source.target, transport) : undefined;
    const sibling = async (): Promise<Lane | undefined> => {
      if (openssh) return new OpenSshLane(openssh, source.target);
      if (init) {
        try {
          return await startWorkerLane(init, stop.signal, options.logger);
        } catch (e) {
          if (isRemoteRunsError(e) && e.kind !== 'protocol') return undefined;
          options.logger?.warn(`Transfer worker unavailable, using this thread: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
      const c = await source.pool.connectSibling(source.host, stop.signal).catch(() => undefined);
      return c ? createLane(transport, c, source.target, true) : undefined;
    };

    const queue: { w: Work; range: ByteRange }[] = [];
    for (const w of works) {
      const missing = w.done.missing(w.bytes);
      const left = missing.reduce((n, [s, e]) => n + (e - s), 0);
      // Big pieces for exec (each costs a process through the container prefix), enough to keep every lane busy.
      const piece = openssh ? Number.MAX_SAFE_INTEGER : (options.segmentBytes ?? Math.max(8 << 20, Math.ceil(left / (wanted * 2))));
      for (const range of splitRanges(missing, piece)) queue.push({ w, range });
      if (w.bytes === 0) queue.push({ w, range: [0, 0] });
    }
    let failure: unknown;
    const work = async (lane: Lane): Promise<void> => {
      for (let job = queue.shift(); job && !stop.signal.aborted; job = queue.shift()) {
        const { w, range } = job;
        try {
          const fh = await openPart(w);
          if (range[1] === range[0]) continue;
          const written = (pos: number, n: number): void => {
            w.done.add(pos, pos + n);
            w.dirty = true;
            onBytes(w, n);
          };
          const job = {
            remotePath: w.file.remotePath,
            size: w.bytes,
            start: range[0],
            end: range[1],
            partPath: partPath(w.file.localPath),
          };
          await lane.fetch(
            job,
            async (pos, data) => {
              try {
                await fh.write(data, 0, data.length, pos);
              } catch (e) {
                throw localError(e, `Cannot write ${job.partPath}`);
              }
              written(pos, data.length);
            },
            stop.signal,
            written,
          );
        } catch (e) {
          failure ??= e;
          stop.abort();
        }
      }
    };
    // The shared connection starts at once; each sibling takes pieces from the same queue as soon as it is up (a
    // worker's start and login take a moment, longer on a busy machine), and one that comes up too late just closes.
    await Promise.all([
      work(lanes[0]),
      ...Array.from({ length: wanted - 1 }, async () => {
        const lane = await sibling();
        if (!lane) return;
        lanes.push(lane);
        await work(lane);
      }),
    ]);
    if (signal?.aborted) throw cancelled();
    if (failure) throw failure;
    return lanes.length;
  } finally {
    clearInterval(sidecarTimer);
    signal?.removeEventListener('abort', onOuterAbort);
    for (const lane of lanes) lane.close();
    await openssh?.dispose();
    lease.dispose();
    await Promise.all(works.map(saveSidecar));
  }
}

/** Verify a fully written `.part`, rename it to the real name and leave the record of what it is. */
async function finish(plan: DownloadPlan, w: Work, verify: 'size' | 'sha256', signal?: AbortSignal): Promise<void> {
  const part = partPath(w.file.localPath);
  await (await openPart(w)).sync().catch(() => undefined);
  await closeHandle(w);
  const st = await fs.stat(part);
  if (st.size !== w.bytes || !w.done.covers(w.bytes)) {
    throw new RemoteRunsError('verify-failed', `${part} holds ${st.size} bytes, the remote file ${w.bytes}; the .part is kept`, { path: part });
  }
  if (verify === 'sha256') {
    const { source } = plan;
    const [remote, local] = await Promise.all([
      runCommand(source.pool.executor(source.host, { idempotent: true }), source.target, sha256Command(w.file.remotePath), signal),
      sha256File(part, signal),
    ]);
    if (remote !== local) {
      throw new RemoteRunsError(
        'verify-failed',
        `SHA-256 of ${w.file.relative} differs: remote ${remote}, local ${local}. The .part is kept at ${part}; fetch again to replace it.`,
        { path: part, remote, local },
      );
    }
    w.sha256 = local;
  }
  // The record of what the file is goes down before the rename: on a disk that filled up meanwhile, failing to write
  // it leaves the verified .part (resumable, kept), never a file without its record (which would later need consent).
  const final: Stats = await fs.stat(part);
  const rec: DoneRecord = {
    version: 1,
    remotePath: w.file.remotePath,
    remoteBytes: w.bytes,
    remoteMtime: w.mtime,
    verified: verify,
    ...(w.sha256 ? { sha256: w.sha256 } : {}),
    localBytes: final.size,
    localMtimeMs: final.mtimeMs,
  };
  try {
    await writeJsonAtomic(doneRecordPath(w.file.localPath), rec);
    await fs.rename(part, w.file.localPath);
  } catch (e) {
    throw localError(e, `Cannot finish ${w.file.localPath}`);
  }
  await fs.rm(partRecordPath(w.file.localPath), { force: true });
  w.finished = true;
  w.dirty = false;
}

/** SHA-256 of a finished local file against the remote one; the record then says it was checksum-verified. */
async function verifyExisting(plan: DownloadPlan, file: PlanFile, signal?: AbortSignal): Promise<string> {
  const { source } = plan;
  const [remote, local] = await Promise.all([
    runCommand(source.pool.executor(source.host, { idempotent: true }), source.target, sha256Command(file.remotePath), signal),
    sha256File(file.localPath, signal),
  ]);
  if (remote !== local) {
    throw new RemoteRunsError(
      'verify-failed',
      `${file.localPath} does not match the remote file (SHA-256 remote ${remote}, local ${local}); it was left as it is. Download it again to replace it.`,
      { path: file.localPath, remote, local },
    );
  }
  const rec = await readDoneRecord(file.localPath);
  if (rec) await writeJsonAtomic(doneRecordPath(file.localPath), { ...rec, verified: 'sha256', sha256: local });
  return local;
}

function openPart(w: Work): Promise<fs.FileHandle> {
  // One open per file even when several lanes start on it at once (a second would leak a descriptor).
  w.handle ??= (async () => {
    const p = partPath(w.file.localPath);
    try {
      // Never truncate: the bytes already there are the resume.
      return await fs.open(p, 'r+').catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
        return fs.open(p, 'w+');
      });
    } catch (e) {
      w.handle = undefined;
      throw localError(e, `Cannot open ${p}`);
    }
  })();
  return w.handle;
}

async function closeHandle(w: Work): Promise<void> {
  const h = w.handle;
  w.handle = undefined;
  await h?.then((fh) => fh.close()).catch(() => undefined);
}

async function saveSidecar(w: Work): Promise<void> {
  if (!w.dirty || w.finished) return;
  w.dirty = false;
  const rec: PartRecord = { version: 1, remotePath: w.file.remotePath, remoteBytes: w.bytes, remoteMtime: w.mtime, done: w.done.toJSON() };
  // Written with room to spare: when the disk fills up, the record of what the .part holds is overwritten in the
  // blocks it already has, so the .part stays resumable.
  await writeJsonAtomic(partRecordPath(w.file.localPath), rec, SIDECAR_RESERVE_BYTES)
    .catch(() => overwriteJsonInPlace(partRecordPath(w.file.localPath), rec))
    .catch(() => {
      w.dirty = true; // try again next time
    });
}

/** Refuse to start when the bytes still to fetch do not fit on the destination's file system. */
async function checkDiskSpace(works: Work[]): Promise<void> {
  if (works.length === 0) return;
  const need = works.reduce((n, w) => n + (w.bytes - w.done.total), 0);
  const dir = path.dirname(works[0].file.localPath);
  const st = await fs.statfs(dir);
  const free = st.bavail * st.bsize;
  if (need > free) {
    throw new RemoteRunsError('disk-full', `Not enough space in ${dir}: ${formatBytes(need)} to download, ${formatBytes(free)} free`, { need, free, path: dir });
  }
}

function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

function cancelled(): RemoteRunsError {
  return new RemoteRunsError('cancelled', 'Download cancelled; the partial files are kept and the next download continues from them');
}

function throwIfCancelled(signal?: AbortSignal): void {
  if (signal?.aborted) throw cancelled();
}
