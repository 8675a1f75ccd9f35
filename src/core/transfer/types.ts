/**
 * The contract of a checkpoint download: a plan (what is remote, what is already local) and the options and
 * result of carrying it out. The extension turns progress into a VS Code notification, the CLI into stderr lines.
 */
import type { Logger } from '../ssh/types';
import type { ConnectionPool, PoolHost } from '../ssh/pool';
import type { Checkpoint, TargetRef } from '../types';
import type { Executor } from '../remote';
import type { OpenSshStreams } from '../ssh/openssh/session';

/**
 * Where the bytes come from: a host reached over SSH (its pool entry and the target, bare host or container, holding
 * the files), or a pod container of a Kubernetes cluster reached through `kubectl exec` (transfer/podSource.ts). How
 * a command runs and how a byte stream starts differ between the two (transfer/source.ts); the plan, the lock, the
 * records, resume, ranges and verification above them are the same code.
 */
export type TransferSource = SshTransferSource | PodTransferSource;

/** A host's pool entry and the target (bare host or container) holding the files. */
export interface SshTransferSource {
  kind?: undefined;
  pool: ConnectionPool;
  host: PoolHost;
  target: TargetRef;
}

/**
 * A pod container of a cluster: every command (listing, stats, hashes, small-file batches) runs through `executor`,
 * and each byte range is one `kubectl … exec -i POD -c C -- sh -c LINE` stream started by `openStreams()`.
 */
export interface PodTransferSource {
  kind: 'pod';
  /** The cluster's name (the download's records name it as a host's). */
  name: string;
  /** A `pod` TargetRef (`NAMESPACE/POD:CONTAINER`). */
  target: TargetRef;
  /** Runs the remote commands of a download in the container (kube/executor.ts PodExecutor). */
  executor: Executor;
  /** The byte streams of one attempt; the attempt closes them (every kubectl of them gone) before it returns. */
  openStreams(): ClosableStreams;
}

/** Streams an attempt owns and closes itself: `close` resolves once none of their processes can write any more. */
export interface ClosableStreams extends OpenSshStreams {
  close(): Promise<void>;
}

/** What is on the local side for one file, before downloading. */
export type LocalState =
  /** Nothing there yet. */
  | { kind: 'absent' }
  /** The file is there, matches the remote size and mtime it was fetched for, and was verified then. */
  | { kind: 'complete-verified'; verified: VerifyMode; sha256?: string }
  /** A `.part` from an earlier attempt of this same remote file (size and mtime unchanged): continue from it. */
  | { kind: 'partial'; bytes: number }
  /** A `.part` of an older version of the remote file: it is discarded and the file fetched from zero. */
  | { kind: 'stale-partial'; bytes: number }
  /** The destination holds a file we cannot vouch for: replacing it needs the user's consent. */
  | { kind: 'differs'; reason: 'no-record' | 'remote-changed' | 'local-changed' | 'not-a-file'; localBytes: number };

export interface PlanFile {
  /** Path relative to the checkpoint (the file's name for a flat checkpoint). */
  relative: string;
  remotePath: string;
  bytes: number;
  /** Remote modification time, ms since the epoch (sub-millisecond precision kept). */
  mtime: number;
  localPath: string;
  /** Where its partial bytes and records live (the state folder at the download root). */
  paths: FilePaths;
  /** It arrives as a symlink with this text (a link to another file of the checkpoint); `bytes` is then 0. */
  symlink?: string;
  state: LocalState;
}

import type { SkippedEntry } from './remoteCommands';

export interface DownloadPlan {
  source: TransferSource;
  /** The download root: run folders below it, the state folder `.remote-runs/` in it. */
  root: string;
  checkpoint: Checkpoint;
  /** The run's name (the local path keeps it). */
  run: string;
  /** The local folder (folder checkpoint) or file (flat checkpoint) the checkpoint lands in. */
  localRoot: string;
  /** Largest first. */
  files: PlanFile[];
  /** Sum of remote sizes. */
  bytes: number;
  /**
   * Entries of the checkpoint left out (special files, broken links, link loops, folder links leaving it), each with
   * its reason: the faces name them, and a pull that skipped any never says only "verified".
   */
  skipped: SkippedEntry[];
  /**
   * Bytes the host's login shell printed before the plan's own command ran (its rc files), where the plan listed the
   * checkpoint over SSH: a stream ssh writes into the `.part` itself could not drop them, so the download decides
   * from this whether its streams may be direct, without a probe of its own.
   */
  shellNoise?: number;
}

export type VerifyMode = 'size' | 'sha256';

export interface DownloadProgress {
  /** Bytes on disk for the files being fetched (resumed bytes included). */
  bytesDone: number;
  bytesTotal: number;
  /** Over the last few seconds. */
  bytesPerSec: number;
  /** undefined until a speed is known. */
  etaSec: number | undefined;
  /** 1-based index of the file most recently worked on, of fileCount. */
  fileIndex: number;
  fileCount: number;
  file: string;
  /**
   * 'list': the checkpoint's files are being listed (nothing known yet). 'transfer': bytes are arriving (with every
   * byte here, the streams still wait for the remote side's SHA-256 of what they sent). 'verify': ranges not proven as
   * they streamed (resumed ones, SFTP reads) are hashed on both sides. 'finish': files are put in place.
   */
  phase: 'list' | 'transfer' | 'verify' | 'finish';
  /** In the verify phase: bytes hashed so far here, of the bytes to hash. */
  verifyDone?: number;
  verifyTotal?: number;
  /**
   * Files put in place (record written, renamed in), of the files this download fetches: in the finish phase (every
   * byte here and proven), and in the transfer phase once small files are put in place as their batch arrives.
   */
  filesPlaced?: number;
  filesToPlace?: number;
}

/** How the bytes move: SFTP reads, or `dd` streams through the target's exec prefix. */
export type TransportKind = 'sftp' | 'exec';

/**
 * Which SSH client moves the bytes: the system's OpenSSH `ssh` (streams through the target's prefix, logged in with
 * the pool's unlocked keys, trusting the pool's host keys), or ssh2 in this process. `auto` takes OpenSSH where it can
 * log in that way and ssh2 otherwise (no `ssh`, Windows, a password login).
 */
export type ClientChoice = 'auto' | 'openssh' | 'ssh2';

export interface DownloadOptions {
  signal?: AbortSignal;
  onProgress?(p: DownloadProgress): void;
  /**
   * Default 'sha256': every byte is proven equal to the remote by SHA-256 on both sides (computed as the bytes
   * stream; resumed bytes hashed again on both sides) before the `.part` becomes the file. 'size' checks the size
   * only: an explicit choice, never reported as verified.
   */
  verify?: VerifyMode;
  /** Hash files already complete on both sides again (the record's word is not taken). */
  recheck?: boolean;
  /** Replace local files that differ from the remote without asking. */
  force?: boolean;
  /** Asked for each `differs` file (unless `force`); false (or no callback) keeps the local file and skips it. */
  overwrite?(file: PlanFile): Promise<boolean>;
  /** Who downloads, as the lock names it to a second download ("remote-runs pull", "VS Code window"). */
  holder?: string;
  /** Parallel lanes (connections) moving byte ranges. Default 4. */
  concurrency?: number;
  /** For the ssh2 client. Default: SFTP on the bare host, exec streams in containers. */
  transport?: TransportKind;
  /** Default 'auto'. */
  client?: ClientChoice;
  /** The OpenSSH client binary. Default `ssh` from PATH. */
  sshPath?: string;
  /** Ignore `.part` data and fetch everything from zero (after a checksum mismatch). */
  fresh?: boolean;
  /** Attempts after a dropped connection, with backoff. Default 5. */
  retries?: number;
  /** First backoff delay, doubling. Default 500 ms. */
  backoffBaseMs?: number;
  /** Bytes per work unit handed to a lane. Default: enough for two pieces per lane, at least 8 MiB. */
  segmentBytes?: number;
  /**
   * OpenSSH: streams (byte ranges on channels of the one login) per big file. Default: from the link's round trip,
   * measured before the transfer: one over loopback or a LAN (the file written by ssh itself), more over a long link.
   */
  streamsPerFile?: number;
  /**
   * Run the sibling lanes (all but the one on the shared connection) in worker threads, so decrypting and writing
   * use more than one core. Default: when there are at least 64 MiB to fetch and 4 or more cores; false keeps every
   * lane in this thread.
   */
  threads?: boolean;
  /** Where a lane that cannot start (e.g. no worker thread) says so. */
  logger?: Logger;
}

export interface FileOutcome {
  relative: string;
  localPath: string;
  /** `identical`: a local file with no (or an outdated) record, found equal to the remote by SHA-256 and kept. */
  outcome: 'downloaded' | 'resumed' | 'already-complete' | 'identical' | 'declined';
  /** A different local file was replaced (with consent, --force, or being our own corrupted download). */
  replaced?: boolean;
  /** It is a symlink with this text, as on the remote side. */
  symlink?: string;
  verified?: VerifyMode;
  sha256?: string;
  /** Bytes that were already on disk and kept. */
  resumedBytes: number;
  /**
   * Bytes fetched more than once (a stale `.part`, a file that changed during the transfer, lost in-flight data, a
   * range whose hashes disagreed).
   */
  refetchedBytes: number;
  /** Ranges whose SHA-256 disagreed and were fetched again. */
  hashMismatches?: number;
}

export interface DownloadResult {
  localRoot: string;
  files: FileOutcome[];
  /** Bytes that crossed the network in this call. */
  bytesFetched: number;
  /** Connection drops recovered from. */
  retries: number;
  /** Lanes actually used. */
  lanes: number;
  transport: TransportKind;
  /** The client that moved the bytes (of the last attempt): `kubectl` for a pod container (kubectl exec streams). */
  client: 'openssh' | 'ssh2' | 'kubectl';
  /** Why `auto` did not use OpenSSH, when it did not. */
  clientNote?: string;
}

/** Receives bytes at a file position; resolves when they are on disk (the lane waits, so memory stays bounded). */
export type WriteFn = (position: number, data: Buffer) => Promise<void>;

export interface RangeJob {
  remotePath: string;
  /** The whole remote file size (for EOF checks and `cat` of a whole file). */
  size: number;
  start: number;
  end: number;
  /** The local `.part` file the bytes go to (a lane in a worker thread writes it itself). */
  partPath?: string;
  /** Stream with the remote side's SHA-256 of the bytes sent (hashedRangeArgv); a lane that cannot ignores it. */
  hash?: boolean;
  /**
   * The lane may have the remote command write the range straight into `partPath`, which then holds exactly `start`
   * bytes (nothing after them), and report what is written through `written` instead of calling `write`. A lane that
   * cannot ignores it.
   */
  direct?: boolean;
  /**
   * With `direct`: the range is written at its place in `partPath`, which may hold other ranges before and after it
   * (several streams of one file), instead of being appended to a file of exactly `start` bytes. A lane that cannot
   * place a writer at an offset streams the range through `write` instead.
   */
  at?: boolean;
  /**
   * Set by a lane whose stream also looked at the file right after its last byte (opensshLane.ts direct streams,
   * remoteCommands.ts withStatAfter): its size and mtime then, as the plan's walk gives them.
   */
  after?: { bytes: number; mtime: number };
}

/** A streamed range's SHA-256, of the bytes written here and of the bytes the remote side sent. */
export interface RangeHashes {
  local: string;
  /**
   * The hex digest, or 'none' when the remote side has no SHA-256 tool; absent when the stream ended well (exit 0,
   * every byte) without its hash line (a server that lost its last stderr line): the range is then hashed on both
   * sides before the rename, as a resumed one.
   */
  remote?: string;
}

/** Where the state of one downloaded file lives. */
export interface FilePaths {
  /** The file itself, in the checkpoint folder. */
  local: string;
  part: string;
  partRecord: string;
  doneRecord: string;
  /** The done record of versions that kept it beside the file. */
  legacyDoneRecord: string;
}
