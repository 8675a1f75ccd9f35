/**
 * Carry out a DownloadPlan: byte ranges over several lanes into `.part` files in the download root's state folder
 * (records.ts), automatic retries with backoff after a dropped connection, verification, and only then a rename to
 * the real name. A file that looks complete is therefore always complete, and by default proven equal to the remote.
 *
 * - **One writer.** The whole download holds the checkpoint's lock (lock.ts): a second download of the same
 *   destination, in this process or another, fails at once with `busy`.
 * - **Progress survives a kill.** A `.part`'s record is advanced as its bytes are written, every second and every
 *   32 MiB, so a SIGKILL at any point refetches at most that much. Resumed bytes are hashed again on both sides.
 * - **Fast on every link.** Over OpenSSH, a file gets as many streams (byte ranges on channels of one login) as the
 *   round trip needs: one over loopback or a LAN, written into the `.part` by ssh itself and read back here to be
 *   counted and hashed; several over a long link, piped into this process, which writes them at their place.
 * - **The same from a pod container.** Its source (podSource.ts) runs the commands through kubectl exec and starts
 *   each range as a kubectl exec of its own (one per file unless asked: POD_STREAMS_PER_FILE); everything else is
 *   this file.
 * - **Verified means compared.** Each stream carries the remote side's SHA-256 of its range, matched against the
 *   SHA-256 of the bytes written here; ranges not checked that way (resumed from an earlier run, read
 *   over SFTP, or streamed without the remote hash line arriving) are hashed on both sides before the rename. A range whose hashes differ is fetched again, once; then
 *   the download fails with `verify-failed` naming both hashes. `verify: 'size'` skips the hashes (never called
 *   verified).
 */
import type { Stats } from 'node:fs';
import { localFs as fs, type FileHandle } from '../util/localFs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runCommand, type RemoteCommand } from '../remote';
import { RemoteRunsError, isRemoteRunsError, type Checkpoint } from '../types';
import { backoffMs, delay } from '../util/delay';
import { createLane, type Lane } from './lanes';
import { acquireLock, busyError, type DownloadLock } from './lock';
import { OpenSshLane } from './opensshLane';
import type { OpenSshStreams } from '../ssh/openssh/session';
import type { OpenSshLease } from '../ssh/pool';
import { SshConnection } from '../ssh/connection';
import type { Transport } from '../ssh/transport';
import { OpenSshConnection } from '../ssh/openssh/connection';
import { localError, makeFolders } from './localErrors';
import { startWorkerLane, workerInit } from './workerLane';
import { sha256File } from './localHash';
import { SpeedMeter } from './progress';
import { batchable, batches, fetchSmallBatch, type SmallPiece } from './smallFiles';
import { FileOutcomes } from './outcomes';
import { checkpointLocalRoot, FolderPresence, linkState, localState, planDownload, withState, type PlanDestination } from './plan';
import { RangeSet, splitRanges, type ByteRange } from './ranges';
import { lockPath, overwriteJsonInPlace, readPartRecord, removeStaleTemps, writeDoneRecord, writeJsonAtomic, type CheckedRange, type DoneRecord, type DownloadOrigin, type PartRecord } from './records';
import { noHashTool, rangeSha256Command, sha256Command, statCheckpointCommand, type RemoteFileStat } from './remoteCommands';
import type { ClosableStreams, RangeJob, DownloadOptions, DownloadPlan, DownloadProgress, DownloadResult, FileOutcome, PlanFile, SshTransferSource, TransferSource, TransportKind, VerifyMode } from './types';
import { sourceExecutor, sourceName } from './source';
import { formatBytes } from '../util/format';

/** One file being fetched, with its mutable transfer state. */
interface Work {
  file: PlanFile;
  index: number;
  /** The remote version being fetched (may be newer than the plan's if it changed). */
  bytes: number;
  mtime: number;
  /** Ranges written (in the page cache at least). */
  done: RangeSet;
  /** Ranges of `done` proven equal to the remote by SHA-256 on both sides. */
  checked: CheckedRange[];
  resumedBytes: number;
  refetchedBytes: number;
  hashMismatches: number;
  handle?: Promise<FileHandle>;
  /** Bytes written since the record was last saved. */
  unsaved: number;
  dirty: boolean;
  saving?: Promise<void>;
  resave: boolean;
  /** Its `.part` record exists (written before its first byte, or found from an earlier run). */
  recorded: boolean;
  /** Ranges of it being fetched now (its handle is closed when none is and all its bytes are written). */
  inflight: number;
  outcome: FileOutcome['outcome'];
  replaced: boolean;
  sha256?: string;
  finished: boolean;
  origin?: DownloadOrigin;
  /** Its size and mtime as its one stream of this attempt saw them after the last byte (RangeJob.after). */
  after?: { bytes: number; mtime: number };
  /** Bytes written since its last flush to disk started (flushAsItLands), and that flush while it runs. */
  unflushed: number;
  flushing?: Promise<void>;
}

const RECORD_INTERVAL_MS = 1000;
/**
 * A `.part` is pushed to disk each time this many more of its bytes have been written (flushAsItLands), whichever lane
 * wrote them. What is left for the fsync before the rename is then at most about this much: after the last byte of a
 * cold 512 MiB pull (bench/transfer.ts `ossize`) it waited 8–19 ms at 16 MiB against 20–52 ms at 64 MiB (7 pulls each,
 * loopback), and 18–135 ms with no flush at all, when it found the whole file (and the journal commit behind it) still
 * to write.
 */
const FLUSH_EVERY_BYTES = 16 << 20;
/** The record is also advanced after this many bytes, so a kill on a fast link refetches at most this much. */
const RECORD_EVERY_BYTES = 32 << 20;
/** A .part's record is padded to a multiple of this, so a full disk can still take its updates (saveRecord). */
const RECORD_RESERVE_BYTES = 4096;
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
/** The smallest range an OpenSSH stream is given (each costs a process on both sides, and a whole-file hash). */
const OPENSSH_MIN_PIECE = 64 << 20;
/**
 * Streams per big file in a pod container, unless asked for more (`streamsPerFile`): one. A kubectl exec stream is a
 * WebSocket on one TCP connection, with no per-channel window as an SSH channel has, so a long link does not need
 * several to fill it; side by side they only add a kubectl here and a process in the container. bench/kube.ts, 2
 * cores: 1 GiB verified in 4.91 s with one stream against 5.92 s with four; 512 MiB through a 50 ms round trip to the
 * API server, 3.25 s against 3.83 s.
 */
const POD_STREAMS_PER_FILE = 1;
/** A remote file that keeps changing under us is reported instead of fetched forever. */
const MAX_CHANGED_RESTARTS = 2;
/** A file whose hashes disagree is fetched again this many times, then the download fails. */
const MAX_HASH_REFETCHES = 1;

/**
 * Download the files of a plan. Resolves with what happened to each file; rejects with RemoteRunsError:
 * `busy` (another download holds the destination), `cancelled` (the `.part` files and their records stay for the
 * next call), `disk-full`, `verify-failed`, `changed`, `permission-denied`, `not-a-directory`, or the connection and
 * container kinds once retries are exhausted.
 */
export async function download(plan: DownloadPlan, options: DownloadOptions = {}): Promise<DownloadResult> {
  return underLock(plan.root, plan.localRoot, plan.checkpoint.name, options, (signal, lock) => downloadLocked(plan, options, signal, lock, false));
}

/**
 * Lock the destination, then plan (planDownload: one walk of the remote, one look at what is here) and download: what
 * the plan says is here is what is here, as nothing else may write there meanwhile. `planned` is told of the plan
 * before any byte moves. Rejects as download() does, `busy` before anything is listed.
 */
export async function downloadCheckpoint(
  source: TransferSource,
  checkpoint: Checkpoint,
  dest: PlanDestination,
  options: DownloadOptions = {},
  planned?: (plan: DownloadPlan) => void,
): Promise<{ plan: DownloadPlan; result: DownloadResult }> {
  const root = path.resolve(dest.root);
  return underLock(root, checkpointLocalRoot(root, dest.run, checkpoint), checkpoint.name, options, async (signal, lock) => {
    const early = warmLinks(source, options, signal);
    try {
      const plan = await planDownload(source, checkpoint, dest, signal);
      planned?.(plan);
      return { plan, result: await downloadLocked(plan, options, signal, lock, true) };
    } finally {
      void early.then((held) => held?.dispose());
    }
  });
}

/**
 * Start what the transfer will wait for while the checkpoint is planned: the host's OpenSSH session (a login, the
 * longest wait of a cold pull: ~190 ms on loopback, six round trips more on a long link) and the link's round trip
 * (ssh/roundTrip.ts, kept per connection), both needing nothing the plan finds. A hold on the session, or undefined
 * (the ssh2 client asked for, a host on the OpenSSH transport, or any failure: the download's own openSshFor meets it
 * again and says why, the pool having kept a lasting reason).
 */
async function warmLinks(source: TransferSource, options: DownloadOptions, signal: AbortSignal): Promise<OpenSshLease | undefined> {
  // A pod's streams are kubectl processes started per range: nothing to log in to beforehand.
  if (options.client === 'ssh2' || source.kind === 'pod') return undefined;
  try {
    const lease = await source.pool.acquire(source.host, signal);
    try {
      const conn = lease.connection;
      void conn.roundTripMs(signal).catch(() => undefined);
      // A host on the OpenSSH transport (or given it first: ConnectionPool opensshFirst) streams through its master.
      if (!(conn instanceof SshConnection)) return undefined;
      return await source.pool.openSsh(source.host, { sshPath: options.sshPath, signal });
    } finally {
      lease.dispose();
    }
  } catch {
    return undefined;
  }
}

/** Run `fn` holding the lock of the download of `name` into `localRoot`; `signal` also ends when the lock is lost. */
async function underLock<T>(root: string, localRoot: string, name: string, options: DownloadOptions, fn: (signal: AbortSignal, lock: DownloadLock) => Promise<T>): Promise<T> {
  throwIfCancelled(options.signal);
  const lock = await acquireLock(lockPath(root, localRoot), `${name} (into ${localRoot})`, options.holder ?? `process ${process.pid}`);
  const inner = new AbortController();
  let lost: RemoteRunsError | undefined;
  const onOuter = (): void => inner.abort();
  options.signal?.addEventListener('abort', onOuter, { once: true });
  lock.onLost(() => {
    lost = busyError(lock.path, name, undefined);
    inner.abort();
  });
  try {
    return await fn(inner.signal, lock);
  } catch (e) {
    throw lost ?? e;
  } finally {
    options.signal?.removeEventListener('abort', onOuter);
    await lock.release();
  }
}

/** `plannedUnderLock`: the plan's local states were read under this lock (else each file is looked at again). */
async function downloadLocked(plan: DownloadPlan, options: DownloadOptions, signal: AbortSignal, lock: DownloadLock, plannedUnderLock: boolean): Promise<DownloadResult> {
  const { source } = plan;
  const transport: TransportKind = options.transport ?? (source.target.kind === 'host' ? 'sftp' : 'exec');
  const verify: VerifyMode = options.verify ?? 'sha256';
  const results = new FileOutcomes(plan.files, verify);
  /** Files being fetched with their state (resumed ones, and every file once it needs a stream). */
  const works: Work[] = [];
  /**
   * Files with nothing of them here (no file, no `.part`), by plan index: no Work until one is needed. Small ones go in
   * batches and are put in place as their batch arrives (fetchSmallFiles); the rest get a Work before the streams.
   */
  let fresh: number[] = [];

  // Records a killed process was writing when it died: this download, holding the lock, is their next owner.
  for (const dir of new Set(plan.files.flatMap((f) => [path.dirname(f.paths.partRecord), path.dirname(f.paths.doneRecord)]))) await removeStaleTemps(dir);

  /** Plan indexes of the files that arrive as symlinks. */
  const links: number[] = [];
  const made = new Set<string>();
  // One origin for every file of the download (its records name it): a copy per file was 100,000 objects more.
  const origin: DownloadOrigin = { host: sourceName(plan.source), target: plan.source.target, run: plan.run, checkpoint: plan.checkpoint.name };
  const folders = new FolderPresence();
  for (const [i, planned] of plan.files.entries()) {
    if (planned.symlink !== undefined) {
      links.push(i);
      continue;
    }
    // A plan made before the lock: what another download did meanwhile counts.
    // (The plan's own file while nothing changed: a copy per file is 100,000 objects more.)
    const state = plannedUnderLock ? planned.state : await localState(planned.paths, planned.remotePath, planned, folders);
    const file = state === planned.state || (state.kind === 'absent' && planned.state.kind === 'absent') ? planned : withState(planned, state);
    const base = { relative: file.relative, localPath: file.localPath, resumedBytes: 0, refetchedBytes: 0 };
    let replaced = false;
    if (file.state.kind === 'complete-verified') {
      if (verify === 'sha256' && (options.recheck || file.state.verified !== 'sha256')) {
        // Asked for a proof the record does not give: hash both sides rather than fetch again.
        const same = await compareWhole(plan, file, signal);
        if (same.equal) {
          await updateDoneRecord(file, same.local);
          results.set(i, { ...base, outcome: 'already-complete', verified: 'sha256', sha256: same.local });
          continue;
        }
        // Our own download, untouched since (size and mtime as we left them), but not the remote's bytes: replace it.
        options.logger?.warn(`${file.localPath} was downloaded earlier but differs from the remote file (SHA-256 local ${same.local}, remote ${same.remote}); fetching it again`);
        replaced = true;
      } else {
        const verified = file.state.verified;
        results.set(i, { ...base, outcome: 'already-complete', verified, ...(file.state.sha256 ? { sha256: file.state.sha256 } : {}) });
        continue;
      }
    } else if (file.state.kind === 'differs') {
      // The same size: maybe the same bytes (copied by hand, or downloaded by an older version). Hashing both sides
      // is cheaper than fetching, and an identical file is never refused.
      if (file.state.localBytes === file.bytes && file.state.reason !== 'not-a-file') {
        const same = await compareWhole(plan, file, signal);
        if (same.equal) {
          await adoptIdentical(file, same.local);
          results.set(i, { ...base, outcome: 'identical', verified: 'sha256', sha256: same.local });
          continue;
        }
      }
      const ok = options.force || (options.overwrite ? await options.overwrite(file) : false);
      throwIfCancelled(signal);
      if (!ok) {
        results.set(i, { ...base, outcome: 'declined' });
        continue;
      }
      replaced = true;
    }
    const w = await prepare(file, i, options.fresh === true, made, folders);
    if (!w && !replaced) {
      fresh.push(i);
      continue;
    }
    const work = w ?? newWork(file, i);
    work.origin = origin;
    work.replaced = replaced;
    works.push(work);
  }

  const toFetch = works.length + fresh.length;
  /** Folders of done records made so far (records.ts writeDoneRecord). */
  const recordDirs = new Set<string>();
  await checkDiskSpace(works.reduce((n, w) => n + (w.bytes - w.done.total), 0) + fresh.reduce((n, i) => n + plan.files[i].bytes, 0), works[0]?.file ?? plan.files[fresh[0]]);

  let bytesFetched = 0;
  let retries = 0;
  let lanesUsed = 0;
  const clientState: ClientState = { choice: options.client ?? 'auto', used: 'ssh2', lock };
  const meter = new SpeedMeter();
  const totalBytes = works.reduce((n, w) => n + w.bytes, 0) + fresh.reduce((n, i) => n + plan.files[i].bytes, 0);
  /** The plan index of the file last heard of (progress names it). */
  let lastFile = works[0]?.index ?? fresh[0];
  let lastProgress = 0;
  /** Files put in place so far, and their bytes (those of files without a Work: put in place from their batch). */
  let placed = 0;
  let placedBytes = 0;
  const report = (force: boolean, phase: DownloadProgress['phase'] = 'transfer', verifying?: { done: number; total: number }): void => {
    const now = Date.now();
    meter.sample(now, bytesFetched);
    if (!options.onProgress || (!force && now - lastProgress < PROGRESS_INTERVAL_MS)) return;
    lastProgress = now;
    const done = placedBytes + works.reduce((n, w) => n + w.done.total, 0);
    options.onProgress({
      bytesDone: done,
      bytesTotal: totalBytes,
      bytesPerSec: meter.bytesPerSec,
      etaSec: meter.eta(totalBytes - done),
      fileIndex: lastFile !== undefined ? lastFile + 1 : 0,
      fileCount: plan.files.length,
      file: lastFile !== undefined ? plan.files[lastFile].relative : '',
      phase,
      ...(verifying ? { verifyDone: verifying.done, verifyTotal: verifying.total } : {}),
      ...(phase === 'finish' || placed > 0 ? { filesPlaced: placed, filesToPlace: toFetch } : {}),
    });
  };

  try {
    let changedRestarts = 0;
    for (let attempt = 0; ; attempt++) {
      fresh = fresh.filter((i) => !results.has(i));
      const pendingWork = works.filter((w) => !w.finished);
      if (pendingWork.length === 0 && fresh.length === 0) break;
      try {
        // The remote files as they are now: a change since the .part was started means starting that file over. The
        // first attempt has the plan's listing, made moments ago (a .part of an earlier run was matched against it):
        // listing again would hold a second copy of every name (100,000 files: a few seconds and tens of MB); a change
        // since is caught by the listing after the transfer, as one during it is.
        if (attempt > 0 && pendingWork.length > 0) await (async (now: Map<string, RemoteFileStat>) => {
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
        })(await statRemote(plan, signal)); // (the listing is let go once compared)
        report(true);
        // Small files first, many to a command (smallFiles.ts), each put in place as its batch arrives; what a batch did
        // not bring goes through the streams, with a Work of its own.
        await fetchSmallFiles(plan, fresh, verify, options, signal, async (i, piece) => {
          const w = newWork(plan.files[i], i);
          w.origin = origin;
          if (!(await placeBatched(w, piece, verify, recordDirs))) return false;
          results.placed(i, w.sha256);
          bytesFetched += w.bytes;
          placedBytes += w.bytes;
          placed++;
          lastFile = i;
          report(false);
          return true;
        });
        for (const i of fresh) {
          if (results.has(i)) continue;
          const w = newWork(plan.files[i], i);
          w.origin = origin;
          works.push(w);
          pendingWork.push(w);
        }
        fresh = [];
        const streamed = pendingWork;
        let laneChanged: unknown;
        try {
          if (streamed.length > 0) {
            const used = await runAttempt(plan, streamed, transport, verify, options, clientState, signal, (w, n) => {
              bytesFetched += n;
              lastFile = w.index;
              report(false);
            });
            lanesUsed = Math.max(lanesUsed, used);
          }
        } catch (e) {
          // A stream that saw the file shorter or longer than listed: the stat below says whether it really changed.
          if (!isRemoteRunsError(e) || e.kind !== 'changed' || signal.aborted) throw e;
          laneChanged = e;
        }
        // Everything is on disk: check the remote side did not change meanwhile, verify, and only then rename.
        // (The listing is let go once compared, before the files are put in place: 100,000 names and stats.)
        let again = false;
        const toFinish: Work[] = [];
        // Each file's stream looked at it after its last byte where it could (withStatAfter): asked again only when
        // one did not (ranged, piped or ssh2 streams, a stat cut short), one command for the whole checkpoint.
        const seen = pendingWork.every((w) => w.after !== undefined);
        let after: Map<string, { bytes: number; mtime: number }> | undefined =
          pendingWork.length === 0 ? new Map() : seen ? new Map(pendingWork.map((w) => [w.file.relative, w.after!])) : await statRemote(plan, signal);
        for (const w of pendingWork) {
          const st = after.get(w.file.relative);
          if (!st || st.bytes !== w.bytes || st.mtime !== w.mtime) {
            if (++changedRestarts > MAX_CHANGED_RESTARTS * works.length) {
              throw new RemoteRunsError('changed', `${w.file.remotePath} changed while it was downloaded, again; try again when the run has finished writing it`, { path: w.file.remotePath });
            }
            if (!st) throw new RemoteRunsError('path-missing', `${w.file.remotePath} disappeared while it was downloaded`, { path: w.file.remotePath });
            await restartFile(w, st);
            again = true;
            continue;
          }
          if (laneChanged) continue;
          toFinish.push(w);
        }
        after = undefined;
        // Files whose every byte is proven go in place several at a time (each is a few syscalls and an fsync: one at
        // a time, 100,000 small files took minutes); a file with ranges still to hash on both sides, one at a time.
        const proven = (w: Work): boolean => verify !== 'sha256' || new RangeSet(w.checked.map((c) => [c.start, c.end] as const)).covers(w.bytes);
        const finishOne = async (w: Work): Promise<void> => {
          lastFile = w.index;
          if (verify === 'sha256' && !(await checkRanges(plan, w, signal, (done, total) => report(done === 0 || done === total, 'verify', { done, total })))) {
            again = true;
            return;
          }
          await finish(w, verify, undefined, recordDirs);
          placed++;
          report(false, 'finish');
        };
        // (Both lists before either runs: a file proven by checkRanges is finished once, not again with the others.)
        const unproven = toFinish.filter((w) => !proven(w));
        const ready = toFinish.filter(proven);
        for (const w of unproven) await finishOne(w);
        await eachAtOnce(ready, FINISH_AT_ONCE, async (w) => {
          throwIfCancelled(signal);
          await finishOne(w);
        });
        report(true, 'finish');
        // The stream said the file changed but it did not (same size and mtime): that is the answer, not a retry.
        if (laneChanged && !again) throw laneChanged;
      } catch (e) {
        await saveRecords(works);
        const err = isRemoteRunsError(e) ? e : new RemoteRunsError('protocol', e instanceof Error ? e.message : String(e));
        if ((err.kind === 'changed' || err.kind === 'command-failed') && !signal.aborted) await throwIfGone(plan, works, signal);
        if (err.kind !== 'unreachable' || signal.aborted || attempt >= (options.retries ?? 5)) throw signal.aborted ? cancelled() : err;
        retries++;
        await delay(backoffMs(attempt + 1, options.backoffBaseMs ?? 500), signal, cancelled);
      }
    }
  } finally {
    // Only the files with a handle open: an async call per file was 100,000 pending frames at once at the very end.
    await Promise.all(works.filter((w) => w.handle).map(closeHandle));
  }

  // Links last: what they point to is in place by now.
  for (const i of links) results.set(i, await placeLink(plan.files[i], verify, options, signal));

  for (const w of works) results.set(w.index, outcomeOf(w, verify));
  return {
    localRoot: plan.localRoot,
    files: results.list(),
    bytesFetched,
    retries,
    lanes: lanesUsed,
    transport: clientState.used === 'openssh' ? 'exec' : transport,
    client: clientState.used,
    ...(clientState.note ? { clientNote: clientState.note } : {}),
  };
}

/** Put a symlink of the checkpoint in place (made beside the .part files, renamed in: never half there). */
async function placeLink(file: PlanFile, verify: VerifyMode, options: DownloadOptions, signal: AbortSignal): Promise<FileOutcome> {
  const text = file.symlink!;
  const base = { relative: file.relative, localPath: file.localPath, resumedBytes: 0, refetchedBytes: 0, symlink: text, verified: verify };
  const state = await linkState(file.localPath, text);
  if (state.kind === 'complete-verified') return { ...base, outcome: 'already-complete' };
  let replaced = false;
  if (state.kind === 'differs') {
    const ok = options.force || (options.overwrite ? await options.overwrite(withState(file, state)) : false);
    throwIfCancelled(signal);
    if (!ok) return { ...base, outcome: 'declined' };
    replaced = true;
  }
  const tmp = file.paths.part;
  try {
    await makeFolders(path.dirname(tmp), `Cannot create ${path.dirname(tmp)}`);
    await makeFolders(path.dirname(file.localPath), `Cannot create ${path.dirname(file.localPath)}`);
    await fs.rm(tmp, { force: true });
    await fs.symlink(text, tmp);
    await fs.rename(tmp, file.localPath);
  } catch (e) {
    await fs.rm(tmp, { force: true }).catch(() => undefined);
    throw localError(e, `Cannot make the symlink ${file.localPath} -> ${text}`);
  }
  return { ...base, outcome: 'downloaded', ...(replaced ? { replaced: true } : {}) };
}

/** The client choice of one download, across its attempts. */
interface ClientState {
  choice: 'auto' | 'openssh' | 'ssh2';
  used: 'openssh' | 'ssh2' | 'kubectl';
  /** Why auto fell back to ssh2. */
  note?: string;
  /** The download's lock, which names the OpenSSH session's lifeline while its streams may write. */
  lock: DownloadLock;
}

/**
 * A hold on the host's OpenSSH session for an attempt (the pool's, shared with metrics streams: no login of its own
 * where one is up), or undefined for ssh2: `auto` falls back (and says why in the logger and the result), `openssh`
 * fails with the reason. The pool remembers a reason that will not change by itself (no binary, no key login, a
 * refused login), so later downloads go straight to ssh2 instead of trying again each time.
 */
async function openSshFor(source: SshTransferSource, options: DownloadOptions, state: ClientState, signal?: AbortSignal): Promise<OpenSshLease | undefined> {
  if (state.choice === 'ssh2') return undefined;
  const { pool, host } = source;
  try {
    return await pool.openSsh(host, { sshPath: options.sshPath, signal });
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
    state.note = why;
    options.logger?.warn(`Downloading from ${host.name} with ssh2 instead of OpenSSH: ${why}`);
    return undefined;
  }
}

/**
 * Set up a file's `.part` state: keep the ranges of a matching record, discard anything else. undefined when nothing
 * of the file is here (no `.part`): it needs no Work until it is fetched.
 */
async function prepare(file: PlanFile, index: number, fresh: boolean, made: Set<string>, folders: FolderPresence): Promise<Work | undefined> {
  const { paths } = file;
  // Asked before the folders are made: a folder that was not there holds no old .part (nor a legacy one beside the file).
  const legacy = await folders.mayHold(file.localPath);
  const partFolder = await folders.mayHold(paths.part);
  // Each folder once per download: files share a few folders (a checkpoint of 100,000 files, 100 of them).
  for (const dir of [path.dirname(file.localPath), path.dirname(paths.part)]) {
    if (made.has(dir)) continue;
    await makeFolders(dir, `Cannot create ${dir}`);
    made.add(dir);
  }
  if (legacy) await adoptLegacyPart(file);
  const partStat = partFolder || legacy ? await fs.stat(paths.part).catch(() => undefined) : undefined;
  if (!partStat) {
    // A record without its .part (a kill between the two) describes nothing: dropped, so none outlives the file.
    if (partFolder) await fs.rm(paths.partRecord, { force: true }).catch(() => undefined);
    return undefined;
  }
  const w = newWork(file, index);
  const rec = await readPartRecord(paths);
  if (partStat && rec && !fresh && rec.remotePath === file.remotePath && rec.remoteBytes === file.bytes && rec.remoteMtime === file.mtime) {
    w.done = new RangeSet(rec.done.map(([s, e]) => [s, Math.min(e, partStat.size)] as const));
    // Resumed bytes are proven again, on both sides, before the rename (checkRanges): whatever happened to them since
    // they were checked (a crash of the machine before they reached the disk, a disk that changed them) is caught.
    w.checked = [];
    w.resumedBytes = w.done.total;
    w.recorded = true;
    if (w.resumedBytes > 0) w.outcome = 'resumed';
  } else {
    // A .part of another version (or no record of where it came from): those bytes are worth nothing.
    w.refetchedBytes += rec && rec.remoteBytes === file.bytes ? new RangeSet(rec.done).total : 0;
    await fs.rm(paths.part, { force: true });
  }
  return w;
}

/** A file's transfer state with nothing of it fetched. */
function newWork(file: PlanFile, index: number): Work {
  return {
    file,
    index,
    bytes: file.bytes,
    mtime: file.mtime,
    done: new RangeSet(),
    checked: [],
    resumedBytes: 0,
    refetchedBytes: 0,
    hashMismatches: 0,
    unsaved: 0,
    unflushed: 0,
    // No record until the file is started (runAttempt writes it before the first byte): a pull of 100,000 small
    // files once wrote all 100,000 records at once, every second, and ran out of descriptors and memory.
    dirty: false,
    resave: false,
    recorded: false,
    inflight: 0,
    outcome: 'downloaded',
    replaced: false,
    finished: false,
  };
}

/** What happened to a file that had a Work. */
function outcomeOf(w: Work, verify: VerifyMode): FileOutcome {
  return {
    relative: w.file.relative,
    localPath: w.file.localPath,
    outcome: w.outcome,
    verified: verify,
    ...(w.sha256 ? { sha256: w.sha256 } : {}),
    ...(w.replaced ? { replaced: true } : {}),
    resumedBytes: w.resumedBytes,
    refetchedBytes: w.refetchedBytes,
    ...(w.hashMismatches ? { hashMismatches: w.hashMismatches } : {}),
  };
}

/**
 * Versions before the state folder kept `NAME.part` and `NAME.part.json` beside the file: move such a `.part` into the
 * state folder with its ranges, none of them checked (they are hashed on both sides before the rename).
 */
async function adoptLegacyPart(file: PlanFile): Promise<void> {
  const oldPart = `${file.localPath}.part`;
  const oldRecord = `${file.localPath}.part.json`;
  const text = await fs.readFile(oldRecord, 'utf8').catch(() => undefined);
  if (text === undefined) return;
  try {
    const r = JSON.parse(text) as { version?: number; remotePath?: string; remoteBytes?: number; remoteMtime?: number; done?: ByteRange[] };
    const exists = await fs.stat(file.paths.part).then(() => true, () => false);
    if (r.version === 1 && r.remotePath === file.remotePath && Array.isArray(r.done) && !exists && (await fs.stat(oldPart).catch(() => undefined))) {
      await fs.rename(oldPart, file.paths.part);
      const rec: PartRecord = { version: 2, remotePath: file.remotePath, remoteBytes: Number(r.remoteBytes), remoteMtime: Number(r.remoteMtime), done: r.done, checked: [] };
      await writeJsonAtomic(file.paths.partRecord, rec, RECORD_RESERVE_BYTES);
    }
  } catch {
    // unreadable: dropped below
  }
  // A long name's legacy names pass NAME_MAX: there are none to drop.
  const tooLong = (e: NodeJS.ErrnoException): void => {
    if (e.code !== 'ENAMETOOLONG') throw e;
  };
  await fs.rm(oldPart, { force: true }).catch(tooLong);
  await fs.rm(oldRecord, { force: true }).catch(tooLong);
}

/**
 * A file deleted under a range read shows up as a short or failed read (`changed`, `command-failed`): if it is gone
 * now, say that (`path-missing`) instead. Any other outcome of the check leaves the original error standing.
 */
async function throwIfGone(plan: DownloadPlan, works: Work[], signal: AbortSignal): Promise<void> {
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
async function restartFile(w: Work, st: { bytes: number; mtime: number }): Promise<void> {
  await w.saving;
  w.refetchedBytes += w.done.total;
  w.resumedBytes = 0;
  w.outcome = 'downloaded';
  w.done = new RangeSet();
  w.checked = [];
  w.bytes = st.bytes;
  w.mtime = st.mtime;
  w.dirty = true;
  await closeHandle(w);
  await fs.rm(w.file.paths.part, { force: true });
  await saveRecord(w);
}

async function statRemote(plan: DownloadPlan, signal?: AbortSignal): Promise<Map<string, RemoteFileStat>> {
  const { source, checkpoint } = plan;
  const walk = await runCommand(sourceExecutor(source), source.target, statCheckpointCommand(checkpoint.path), signal);
  const map = new Map<string, RemoteFileStat>();
  for (const s of walk.files) map.set(checkpoint.isDir ? s.relative : checkpoint.name, s);
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
  verify: VerifyMode,
  options: DownloadOptions,
  clientState: ClientState,
  signal: AbortSignal,
  onBytes: (w: Work, n: number) => void,
): Promise<number> {
  const { source } = plan;
  const stop = new AbortController();
  const onOuterAbort = (): void => stop.abort();
  signal.addEventListener('abort', onOuterAbort, { once: true });
  // A pod container has no connection of ours: each stream is a kubectl process of the attempt's own (podSource.ts).
  const lease = source.kind === 'pod' ? undefined : await source.pool.acquire(source.host, signal);
  const conn = lease?.connection;
  /**
   * The streams: the host's OpenSSH session held from the pool (session), its OpenSSH transport, or a pod's kubectl
   * exec streams (pod), which this attempt owns and closes.
   */
  let openssh: OpenSshStreams | undefined;
  let session: OpenSshLease | undefined;
  let pod: ClosableStreams | undefined;
  /** The host's OpenSSH-first link (ConnectionPool opensshFirst), which this download may end as it retires a session. */
  let firstLink: Transport | undefined;
  try {
    if (source.kind === 'pod') openssh = pod = source.openStreams();
    else if (conn instanceof SshConnection) openssh = (session = await openSshFor(source, options, clientState, signal))?.session;
    else if (conn) {
      firstLink = source.pool.isOpenSshFirst(source.host, conn) ? conn : undefined;
      openssh = streamsOfTransport(conn, firstLink !== undefined);
    }
  } catch (e) {
    signal.removeEventListener('abort', onOuterAbort);
    lease?.dispose();
    throw e;
  }
  clientState.used = pod ? 'kubectl' : openssh ? 'openssh' : 'ssh2';
  if (openssh) {
    try {
      await clientState.lock.writers(openssh.lifelinePid);
    } catch (e) {
      signal.removeEventListener('abort', onOuterAbort);
      session?.dispose();
      await pod?.close();
      lease?.dispose();
      throw e;
    }
  }
  const ssh2 = conn as SshConnection;
  /** A stream of this attempt had the session's master write into a `.part` itself (see the finally below). */
  let wroteDirect = false;
  let succeeded = false;
  const lanes: Lane[] = [openssh ? new OpenSshLane(openssh, source.target) : createLane(transport, ssh2, source.target, false)];
  // Files started in this attempt and not yet finished: the only ones whose records can need saving. The timer saves
  // them a few at a time, so 100,000 small files never mean 100,000 writes at once.
  const active = new Set<Work>(works.filter((w) => w.recorded));
  let timerSaving = false;
  const recordTimer = setInterval(() => {
    if (timerSaving) return;
    timerSaving = true;
    void saveRecords(active).finally(() => (timerSaving = false));
  }, RECORD_INTERVAL_MS);
  try {
    const remaining = works.reduce((n, w) => n + (w.bytes - w.done.total), 0);
    // OpenSSH: streams side by side on the one master connection, a big file cut into ranges of at least
    // OPENSSH_MIN_PIECE. One channel carries at most its window per round trip (2 MiB for OpenSSH's sessions: ~40 MB/s
    // at 50 ms), so over a long link the streams add up; over loopback they only share the master's one decrypting
    // process and cost CPU. Channels of one login are cheap (no login, no thread): up to twice `concurrency` of them.
    // On a 50 ms link 4 streams moved 2.5x scp's throughput, 8 moved 3.1x (bench/transfer.ts); how many a file gets
    // follows from the link's round trip, which the pool's connection measured once (a request that starts no
    // process, ssh/roundTrip.ts) and keeps: the same pull on the same link takes the same path every time.
    const maxStreams = 2 * (options.concurrency ?? 4);
    // The smallest range a stream is given: OPENSSH_MIN_PIECE, or the pieces asked for (segmentBytes).
    const minPiece = options.segmentBytes ?? OPENSSH_MIN_PIECE;
    let why = '';
    let perFile = 0;
    if (openssh) {
      if (options.streamsPerFile !== undefined) why = 'as asked';
      else if (remaining < 2 * minPiece) why = `${formatBytes(remaining)} to fetch, under two pieces of ${formatBytes(minPiece)}`;
      else if (pod) why = 'a pod container: a kubectl exec stream has no window to fill, more side by side only cost CPU';
      // A link that cannot be measured (an OpenSSH master that refuses the probe's forward) gets one stream, and
      // the log says why; a lost link fails the attempt as any command would.
      const rtt = why || !conn
        ? undefined
        : await conn.roundTripMs(signal).catch((e: unknown) => {
            if (!isRemoteRunsError(e) || e.kind !== 'protocol') throw e;
            why = `round trip not measured: ${e.message}`;
            return undefined;
          });
      if (rtt !== undefined) why = `round trip ${rtt.toFixed(1)} ms`;
      const fallback = pod ? POD_STREAMS_PER_FILE : 1;
      perFile = Math.max(1, Math.min(maxStreams, options.streamsPerFile ?? (rtt !== undefined ? streamsForRoundTrip(rtt) : fallback)));
      // The choice and its reason in the log: a pull that takes another path than the last one says why.
      options.logger?.info(`download of ${plan.checkpoint.name}: ${perFile} ${pod ? 'kubectl exec' : 'OpenSSH'} stream${perFile === 1 ? '' : 's'} per file (${why}; at most ${maxStreams})`);
    }
    const wanted = openssh
      ? Math.max(1, Math.min(maxStreams, Math.max(works.length, works.reduce((n, w) => n + Math.min(perFile, Math.ceil((w.bytes - w.done.total) / minPiece)), 0))))
      : Math.max(1, Math.min(options.concurrency ?? 4, Math.ceil(remaining / (8 << 20)) || 1));
    // Siblings reuse the pool's secrets and never prompt; a host that would need a prompt gets fewer lanes. Each
    // runs in a worker thread of its own (decrypting and writing off this thread, on another core), or here when
    // threads are off or a worker cannot start.
    const threads = options.threads ?? (remaining >= THREADS_MIN_BYTES && os.availableParallelism() >= THREADS_MIN_CORES);
    const init = wanted > 1 && threads && !openssh && source.kind !== 'pod' ? workerInit(source.pool, source.host, source.target, transport) : undefined;
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
      if (source.kind === 'pod') return undefined;
      const c = await source.pool.connectSibling(source.host, stop.signal).catch(() => undefined);
      return c ? createLane(transport, c, source.target, true) : undefined;
    };

    // ssh writes into the .part itself: one stream appending the rest of a file, or each of several ranges at its
    // place (opensshLane.ts placed); only this process then reads the bytes, back from the page cache, to hash them.
    // (A pod's `sh -c` is no login shell: nothing of an rc file prints before the command.)
    const directWrites = openssh?.directWrites === true && !options.segmentBytes && (source.kind === 'pod' || !(plan.shellNoise !== undefined ? plan.shellNoise > 0 : await shellPrints(source, signal)));
    const queue: { w: Work; range: ByteRange; direct?: boolean; at?: boolean }[] = [];
    for (const w of works) {
      w.after = undefined;
      const missing = w.done.missing(w.bytes);
      const left = missing.reduce((n, [s, e]) => n + (e - s), 0);
      // One OpenSSH stream for the rest of a file (a single hole up to its end): ssh writes it into the .part itself.
      if (openssh && directWrites && perFile === 1 && !options.segmentBytes && missing.length === 1 && missing[0][1] === w.bytes) {
        queue.push({ w, range: missing[0], direct: true });
        wroteDirect = true;
        continue;
      }
      // Big pieces for exec (each costs a process through the container prefix), enough to keep every lane busy.
      const piece = options.segmentBytes ?? (openssh ? Math.max(OPENSSH_MIN_PIECE, Math.ceil(left / perFile)) : Math.max(8 << 20, Math.ceil(left / (wanted * 2))));
      for (const range of splitRanges(missing, piece)) queue.push(openssh && directWrites ? { w, range, direct: true, at: true } : { w, range });
      if (w.bytes === 0) queue.push({ w, range: [0, 0] });
    }
    let failure: unknown;
    const work = async (lane: Lane): Promise<void> => {
      for (let job = queue.shift(); job && !stop.signal.aborted; job = queue.shift()) {
        const { w, range, direct, at } = job;
        w.inflight++;
        try {
          active.add(w);
          // The record exists (with room to spare) before the first byte: a disk that fills up at once can still take it.
          if (!w.recorded) {
            w.dirty = true;
            await saveRecord(w);
          }
          const fh = await openPart(w);
          if (range[1] === range[0]) continue;
          // Appended to by the stream: nothing may follow its start (bytes there are not recorded, so none is lost).
          if (direct && !at) await fh.truncate(range[0]).catch((e: unknown) => {
            throw localError(e, `Cannot write ${w.file.paths.part}`);
          });
          const written = (pos: number, n: number): void => {
            w.done.add(pos, pos + n);
            w.dirty = true;
            w.unsaved += n;
            onBytes(w, n);
            flushAsItLands(w, n);
            if (w.unsaved >= RECORD_EVERY_BYTES) void saveRecord(w);
          };
          const job: RangeJob = {
            remotePath: w.file.remotePath,
            size: w.bytes,
            start: range[0],
            end: range[1],
            partPath: w.file.paths.part,
            hash: verify === 'sha256',
            direct,
            at,
          };
          const hashes = await lane.fetch(
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
          // The file's one stream of this attempt (a direct append): what it saw after its last byte stands for the
          // look at the remote file after the transfer.
          if (direct && !at) w.after = job.after;
          const remote = hashes?.remote;
          if (hashes && remote !== undefined) streamChecked(w, range, hashes.local, remote);
          else if (hashes) options.logger?.warn(`The stream of ${w.file.remotePath} [${range[0]}, ${range[1]}) ended without the remote side's SHA-256; that range is hashed on both sides before the rename`);
        } catch (e) {
          failure ??= e;
          stop.abort();
        } finally {
          // A file whose bytes are all written gives its descriptor back at once: 100,000 small files must not hold
          // 100,000 open .part files until the last one arrives (EMFILE). finish() opens it again to flush it.
          if (--w.inflight === 0 && w.done.covers(w.bytes)) await closeHandle(w);
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
    if (signal.aborted) throw cancelled();
    if (failure) throw failure;
    succeeded = true;
    return lanes.length;
  } finally {
    clearInterval(recordTimer);
    signal.removeEventListener('abort', onOuterAbort);
    for (const lane of lanes) lane.close();
    if (openssh) {
      // A direct stream's bytes are written by the session's master, which outlives this download. On success every
      // such stream ended with its range whole in the file, so nothing more comes; after a failure or a stop one may
      // still be in flight, and only the master's exit makes sure nothing writes into a `.part` once the lock is let
      // go: the session is ended (the next holder logs in again).
      if (session && wroteDirect && !succeeded) await session.retire();
      if (firstLink && wroteDirect && !succeeded && source.kind !== 'pod') await source.pool.retireLink(firstLink);
      session?.dispose();
      // A pod's streams are the attempt's own: every kubectl of them is gone before the lock says no writer is left.
      await pod?.close();
      await clientState.lock.writers(undefined).catch(() => undefined);
    }
    lease?.dispose();
    // A file whose every byte arrived is put in place next (its record then goes); should that fail, its record is
    // saved there (the attempt's catch). Saving it here too cost a record write, and its fsync behind the stream's
    // last flush, before the look after the transfer: 8–35 ms of a cold 512 MiB pull.
    await saveRecords(succeeded ? [...active].filter((w) => !w.done.covers(w.bytes)) : active);
  }
}

/** Below this many small files, each has its stream as before: a batch pays off for many files, not for a few. */
const SMALL_BATCH_MIN_FILES = 64;
/** Batches of small files fetched at once (each one remote command on the pool's connection). */
const SMALL_BATCHES_AT_ONCE = 4;

/**
 * Fetch the small files among `fresh` (plan indexes of files with nothing here) in batches (smallFiles.ts). `place`
 * is handed each file its batch brought whole; it puts it in place and says whether it could (placeBatched). The rest
 * are left for the streams. No `.part` record is written for them: a kill loses at most the batches in flight.
 */
async function fetchSmallFiles(
  plan: DownloadPlan,
  fresh: readonly number[],
  verify: VerifyMode,
  options: DownloadOptions,
  signal: AbortSignal,
  place: (index: number, piece: SmallPiece) => Promise<boolean>,
): Promise<void> {
  if (options.segmentBytes) return;
  const small = (i: number): boolean => batchable({ remotePath: plan.files[i].remotePath, bytes: plan.files[i].bytes });
  let count = 0;
  for (const i of fresh) if (small(i) && ++count >= SMALL_BATCH_MIN_FILES) break;
  if (count < SMALL_BATCH_MIN_FILES) return;
  const { source } = plan;
  const exec = sourceExecutor(source);
  // Remote paths are made as the batches are cut, and live only as long as their batch.
  const queue = batches((function* () {
    for (const i of fresh) if (small(i)) yield { remotePath: plan.files[i].remotePath, bytes: plan.files[i].bytes, i };
  })());
  // On a failure no batch starts and the running ones are waited for (eachAtOnce): none may still be putting files in
  // place when the next attempt (or the caller) looks at what is here.
  await eachAtOnce(queue, SMALL_BATCHES_AT_ONCE, async (batch) => {
    throwIfCancelled(signal);
    const pieces = await fetchSmallBatch(exec, source.target, batch, verify === 'sha256', signal);
    if (pieces.some((p) => p?.remote === 'none')) throw noHashTool();
    await eachAtOnce(batch.map((f, k) => ({ i: f.i, piece: pieces[k] })), PLACE_AT_ONCE, async ({ i, piece }) => {
      throwIfCancelled(signal);
      if (piece) await place(i, piece);
    });
  });
}

/**
 * Push a `.part` to disk beside its stream, one fdatasync at a time, each FLUSH_EVERY_BYTES more written (`n` just
 * were), through its handle (the bytes may have been written by ssh or a worker thread: a sync flushes the file, not a
 * descriptor). A failed flush is not this call's to report: finish()'s fsync meets the same disk.
 */
function flushAsItLands(w: Work, n: number): void {
  w.unflushed += n;
  if (w.flushing || !w.handle || w.unflushed < FLUSH_EVERY_BYTES) return;
  w.unflushed = 0;
  const flushing = w.handle.then((fh) => fh.datasync()).then(
    () => undefined,
    () => undefined,
  );
  w.flushing = flushing.finally(() => (w.flushing = undefined));
}

/** Files of one batch put in place at once (each an fsync, a record and a rename; four batches run side by side). */
const PLACE_AT_ONCE = 4;

/**
 * Put a file its batch brought whole in place: its bytes proven (the remote SHA-256 of them matches, or any with
 * verify 'size') and the file still the version the plan listed (the batch's stat after the hash). False, with
 * nothing written, for a file that must go through a stream (which says what went wrong, or fetches the new version).
 */
async function placeBatched(w: Work, piece: SmallPiece, verify: VerifyMode, made: Set<string>): Promise<boolean> {
  if (verify === 'sha256' && piece.remote !== piece.local) return false;
  if (!piece.after || piece.after.bytes !== w.bytes || piece.after.mtime !== w.mtime || piece.data.length !== w.bytes) return false;
  // The paths once per file (each derivation is five strings), and written through the handle finish() flushes.
  const paths = w.file.paths;
  try {
    w.handle = fs.open(paths.part, 'w+');
    await (await w.handle).write(piece.data, 0, piece.data.length, 0);
  } catch (e) {
    await closeHandle(w);
    throw localError(e, `Cannot write ${paths.part}`);
  }
  w.done.add(0, w.bytes);
  // An array of exactly one (a push into [] reserves 17 slots).
  if (verify === 'sha256') w.checked = [{ start: 0, end: w.bytes, sha256: piece.local }];
  await finish(w, verify, paths, made);
  return true;
}

/** Files put in place at once once their bytes are proven (finish: an fsync, two stats, a record and a rename each). */
const FINISH_AT_ONCE = 16;

/**
 * Run `fn` over `items` (taken one by one: a generator is read only as fast as they are done), at most `n` at a
 * time. On a failure no new item starts, the running ones are waited for (none is left writing behind the caller's
 * back), and the first failure is thrown.
 */
async function eachAtOnce<T>(items: Iterable<T>, n: number, fn: (item: T) => Promise<void>): Promise<void> {
  const it = items[Symbol.iterator]();
  let failure: { e: unknown } | undefined;
  await Promise.all(
    Array.from({ length: Array.isArray(items) ? Math.min(n, items.length) : n }, async () => {
      for (let next = it.next(); !next.done; next = failure ? { done: true, value: undefined } : it.next()) {
        const item = next.value;
        try {
          await fn(item);
        } catch (e) {
          failure ??= { e };
        }
      }
    }),
  );
  if (failure) throw failure.e;
}

/** How many records are written at once by saveRecords. */
const RECORD_SAVES_AT_ONCE = 16;

/** Save the records of `works` (those dirty), a few at a time. */
async function saveRecords(works: Iterable<Work>): Promise<void> {
  const dirty = [...works].filter((w) => w.dirty && !w.finished);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(RECORD_SAVES_AT_ONCE, dirty.length) }, async () => {
      while (next < dirty.length) await saveRecord(dirty[next++]);
    }),
  );
}

/**
 * The streams of a host on the OpenSSH transport: its one master carries them (no second login, no prompt). On a
 * transport the host's ssh config needs, they write through pipes only: the master outlives the download and is
 * shared with everything else, so it must not hold a `.part` open. On the host's OpenSSH-first link (`retirable`: a
 * pull's link, which the download ends after a failed attempt as it retires a session) ssh writes into the file itself.
 */
function streamsOfTransport(conn: Transport, retirable: boolean): OpenSshStreams {
  if (!(conn instanceof OpenSshConnection)) throw new RemoteRunsError('protocol', `Downloads over a ${conn.kind} transport are not supported`);
  return { lifelinePid: conn.lifelinePid, directWrites: retirable, run: (line, stdout, stdoutAt) => conn.run(line, stdout, 'ignore', stdoutAt) };
}

/**
 * Does the login shell print before every command (an rc file's banner, a module system)? A stream that ssh writes
 * into the `.part` itself cannot drop that (shell/portable.ts): such a host gets piped streams, which do.
 */
async function shellPrints(source: SshTransferSource, signal: AbortSignal): Promise<boolean> {
  const exec = source.pool.executor(source.host, { idempotent: true });
  const probe: RemoteCommand<boolean> = { argv: ['true'], describe: 'a look at what the login shell prints', parse: (r) => (r.shellNoise ?? 0) > 0 };
  return runCommand(exec, { kind: 'host', id: '' }, probe, signal);
}

/**
 * Streams a file needs for the link to carry ~400 MB/s: one channel moves at most its window (2 MiB) per round
 * trip. Under ~5 ms (loopback, a LAN) that is one stream, which ssh writes into the file itself; at 50 ms, eight.
 */
export function streamsForRoundTrip(rttMs: number): number {
  return Math.max(1, Math.ceil((400e6 * (rttMs / 1000)) / (2 << 20)));
}

/** A streamed range's two hashes: equal, the range is proven; different, it is dropped and fetched again (once). */
function streamChecked(w: Work, [start, end]: ByteRange, local: string, remote: string): void {
  if (remote === 'none') throw noHashTool();
  if (remote === local) {
    w.checked.push({ start, end, sha256: local });
    w.dirty = true;
    return;
  }
  mismatch(w, start, end, local, remote);
}

/** Forget a range whose hashes disagree, so the next attempt fetches it again; the second time, fail. */
function mismatch(w: Work, start: number, end: number, local: string, remote: string): void {
  w.hashMismatches++;
  if (w.hashMismatches > MAX_HASH_REFETCHES) {
    throw new RemoteRunsError(
      'verify-failed',
      `SHA-256 of ${w.file.relative} [${start}, ${end}) differs again after fetching it anew: remote ${remote}, local ${local}. ` +
        'Something between the remote file and this disk changes the bytes; the .part is kept.',
      { path: w.file.paths.part, remote, local, start, end },
    );
  }
  w.done.remove(start, end);
  w.checked = w.checked.filter((c) => c.end <= start || c.start >= end);
  w.refetchedBytes += end - start;
  w.dirty = true;
}

/**
 * Prove every byte of a fully written `.part` equal to the remote: ranges not checked as they streamed (resumed from
 * an earlier run, read over SFTP, cut short by a kill) are hashed on both sides now, `progress` told of the bytes hashed
 * here. False when a range disagreed and was dropped for the next attempt.
 */
async function checkRanges(plan: DownloadPlan, w: Work, signal: AbortSignal, progress: (done: number, total: number) => void): Promise<boolean> {
  const proven = new RangeSet(w.checked.map((c) => [c.start, c.end] as const));
  const holes = proven.missing(w.bytes);
  if (holes.length === 0) return true;
  const total = holes.reduce((n, [s, e]) => n + (e - s), 0);
  let done = 0;
  progress(done, total);
  await closeHandle(w);
  const { source } = plan;
  const exec = sourceExecutor(source);
  let ok = true;
  for (const [start, end] of holes) {
    const [remote, local] = await Promise.all([
      runCommand(exec, source.target, rangeSha256Command(w.file.remotePath, start, end, w.bytes), signal),
      sha256File(w.file.paths.part, signal, { start, end }, (n) => progress((done += n), total)),
    ]);
    if (remote === local) {
      w.checked.push({ start, end, sha256: local });
      w.dirty = true;
    } else {
      mismatch(w, start, end, local, remote);
      ok = false;
    }
  }
  await saveRecord(w);
  return ok;
}

/** Put a fully written, verified `.part` in place and leave the record of what it is. */
async function finish(w: Work, verify: VerifyMode, paths = w.file.paths, made?: Set<string>): Promise<void> {
  // Once only: a second call would open (and so create) an empty .part where the file was renamed from.
  if (w.finished) return;
  await (await openPart(w)).sync().catch(() => undefined);
  await closeHandle(w);
  await w.saving;
  const st = await fs.stat(paths.part);
  if (st.size !== w.bytes || !w.done.covers(w.bytes)) {
    throw new RemoteRunsError('verify-failed', `${paths.part} holds ${st.size} bytes, the remote file ${w.bytes}; the .part is kept`, { path: paths.part });
  }
  if (verify === 'sha256') {
    // One range over the whole file is the whole file's SHA-256 (the usual case: one stream per file).
    const whole = w.bytes === 0 ? EMPTY_SHA256 : w.checked.find((c) => c.start === 0 && c.end >= w.bytes)?.sha256;
    if (whole) w.sha256 = whole;
  }
  // The record of what the file is goes down before the rename: on a disk that filled up meanwhile, failing to write
  // it leaves the verified .part (resumable, kept), never a file without its record (which would later need consent).
  const final: Stats = st;
  const rec: DoneRecord = {
    version: 2,
    remotePath: w.file.remotePath,
    remoteBytes: w.bytes,
    remoteMtime: w.mtime,
    verified: verify,
    ...(w.sha256 ? { sha256: w.sha256 } : {}),
    localBytes: final.size,
    localMtimeMs: final.mtimeMs,
  };
  try {
    await writeDoneRecord(paths, rec, made);
    await fs.rename(paths.part, paths.local);
  } catch (e) {
    throw localError(e, `Cannot finish ${paths.local}`);
  }
  // (A file never asked to record has none: prepare() dropped any record without its .part.)
  const mayHaveRecord = w.recorded || w.dirty;
  w.finished = true;
  w.dirty = false;
  // Its proven ranges are not needed once it is in place (the whole file's SHA-256 is kept above).
  w.checked = [];
  if (mayHaveRecord) await fs.rm(paths.partRecord, { force: true });
}

const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** SHA-256 of a whole local file and of the remote one. */
async function compareWhole(plan: DownloadPlan, file: PlanFile, signal: AbortSignal): Promise<{ equal: boolean; local: string; remote: string }> {
  const { source } = plan;
  const [remote, local] = await Promise.all([
    runCommand(sourceExecutor(source), source.target, sha256Command(file.remotePath), signal),
    sha256File(file.localPath, signal),
  ]);
  return { equal: remote === local, local, remote };
}

/** A complete file proven equal by hash: its record now says so. */
async function updateDoneRecord(file: PlanFile, sha256: string): Promise<void> {
  const st = await fs.stat(file.localPath);
  const rec: DoneRecord = {
    version: 2,
    remotePath: file.remotePath,
    remoteBytes: file.bytes,
    remoteMtime: file.mtime,
    verified: 'sha256',
    sha256,
    localBytes: st.size,
    localMtimeMs: st.mtimeMs,
  };
  await writeDoneRecord(file.paths, rec).catch((e: unknown) => {
    throw localError(e, `Cannot record ${file.localPath}`);
  });
}

/** A local file found identical to the remote one (no record, or an outdated one): kept, and recorded as ours. */
const adoptIdentical = updateDoneRecord;

function openPart(w: Work): Promise<FileHandle> {
  // One open per file even when several lanes start on it at once (a second would leak a descriptor).
  w.handle ??= (async () => {
    const p = w.file.paths.part;
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

/**
 * Advance a `.part`'s record to what is written (handed to the kernel: a killed process loses none of it). No
 * fsync here: flushing hundreds of MiB of dirty pages took seconds on the test machine, during which the record
 * stood still (a kill at 50% of 1 GiB found nothing recorded). A crash of the whole machine may lose bytes the record
 * claims; resumed bytes are hashed again on both sides before the rename, so that costs a refetch, never a wrong
 * file. One save at a time per file; a request meanwhile saves again after it.
 */
function saveRecord(w: Work): Promise<void> {
  if (w.finished || !w.dirty) return w.saving ?? Promise.resolve();
  if (w.saving) {
    w.resave = true;
    return w.saving;
  }
  w.saving = (async () => {
    do {
      w.resave = false;
      w.dirty = false;
      const unsaved = w.unsaved;
      const done = new RangeSet(w.done.toJSON());
      const checked = w.checked.filter((c) => done.contains(c.start, c.end));
      if (w.finished) return;
      const rec: PartRecord = { version: 2, remotePath: w.file.remotePath, remoteBytes: w.bytes, remoteMtime: w.mtime, done: done.toJSON(), checked, ...(w.origin ? { origin: w.origin } : {}) };
      // Written with room to spare: when the disk fills up, the record of what the .part holds is overwritten in the
      // blocks it already has, so the .part stays resumable.
      const ok = await writeJsonAtomic(w.file.paths.partRecord, rec, RECORD_RESERVE_BYTES)
        .catch(() => overwriteJsonInPlace(w.file.paths.partRecord, rec))
        .then(
          () => true,
          () => false,
        );
      if (ok) {
        w.unsaved = Math.max(0, w.unsaved - unsaved);
        w.recorded = true;
      }
      else w.dirty = true; // try again next time
    } while (w.resave);
  })().finally(() => {
    w.saving = undefined;
  });
  return w.saving;
}

/** Refuse to start when the bytes still to fetch (`need`) do not fit on the file system of the first file's `.part`. */
async function checkDiskSpace(need: number, first: PlanFile | undefined): Promise<void> {
  if (!first) return;
  const dir = path.dirname(first.paths.part);
  const st = await fs.statfs(dir);
  const free = st.bavail * st.bsize;
  if (need > free) {
    throw new RemoteRunsError('disk-full', `Not enough space in ${dir}: ${formatBytes(need)} to download, ${formatBytes(free)} free`, { need, free, path: dir });
  }
}

function cancelled(): RemoteRunsError {
  return new RemoteRunsError('cancelled', 'Download cancelled; the partial files are kept and the next download continues from them');
}

function throwIfCancelled(signal?: AbortSignal): void {
  if (signal?.aborted) throw cancelled();
}
