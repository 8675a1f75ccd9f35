/**
 * What a download of a checkpoint would do: the remote files as they are now (one `find` through the target's
 * prefix) and, for each, what the local side already holds. Nothing is written.
 */
import { localFs as fs } from '../util/localFs';
import * as path from 'node:path';
import { runCommand } from '../remote';
import { RemoteRunsError, type Checkpoint } from '../types';
import { filePaths, readDoneRecord, readPartRecord, type FilePaths } from './records';
import { RangeSet } from './ranges';
import { statCheckpointCommand, type RemoteFileStat, type RemoteWalk } from './remoteCommands';
import type { SkippedEntry } from './remoteCommands';
import type { DownloadPlan, LocalState, PlanFile, TransferSource } from './types';
import { sourceExecutor } from './source';
import { displayName } from '../../shared/display';
import { encodeName, hasLoneSurrogate } from '../util/nameBytes';

export interface PlanDestination {
  /** The download root (a setting, or --to). */
  root: string;
  /** The run's name: the local path keeps it (`<root>/<run>/step_20000/…`). */
  run: string;
}

/**
 * Plan the download of `checkpoint` into `<root>/<run>/<checkpoint name>/<file>` (folder) or `<root>/<run>/<file>`
 * (flat file). Throws RemoteRunsError (`path-missing` when the checkpoint is gone, container and connection kinds).
 */
export async function planDownload(
  source: TransferSource,
  checkpoint: Checkpoint,
  dest: PlanDestination,
  signal?: AbortSignal,
): Promise<DownloadPlan> {
  const stat = statCheckpointCommand(checkpoint.path);
  // What the login shell printed before the walk ran: the download decides its direct streams from it (no probe).
  let shellNoise: number | undefined;
  const walk = await runCommand(sourceExecutor(source), source.target, {
    ...stat,
    parse: (result) => {
      shellNoise = result.shellNoise;
      return stat.parse(result);
    },
  }, signal);
  const plan = await buildPlan(source, checkpoint, dest, walk);
  return shellNoise !== undefined && source.kind !== 'pod' ? { ...plan, shellNoise } : plan;
}

/**
 * The checkpoint as a pull needs it: its listed files only where they say which files of a folder are its own (final
 * weights beside the rest of a run, a group of files); the pull walks the folder itself. A caller that lets go of the
 * run's listing and keeps this lets go of the listed files too (100,000 files: ~9 MB for the whole pull).
 */
export function checkpointToPull(checkpoint: Checkpoint): Checkpoint {
  return ownFilesListed(checkpoint) || checkpoint.files.length === 0 ? checkpoint : { ...checkpoint, files: [] };
}

function ownFilesListed(checkpoint: Checkpoint): boolean {
  return checkpoint.kind === 'final' || checkpoint.fileGroup === true;
}

/** The plan from a remote listing (separate so a refresh during download can reuse it). */
export async function buildPlan(source: TransferSource, checkpoint: Checkpoint, dest: PlanDestination, walk: RemoteWalk | RemoteFileStat[]): Promise<DownloadPlan> {
  const root = path.resolve(dest.root);
  const localRoot = checkpointLocalRoot(root, dest.run, checkpoint);
  const files: PlanFile[] = [];
  let stats = Array.isArray(walk) ? walk : walk.files;
  let skipped = Array.isArray(walk) ? [] : walk.skipped;
  const at: PlanPlace = { root, remoteRoot: checkpoint.path, localRoot, isDir: checkpoint.isDir };
  const folders = new FolderPresence();
  if (!checkpoint.isDir) {
    const st = stats.find((s) => s.relative === '');
    if (!st) {
      const special = skipped.find((s) => s.relative === '');
      if (special) throw new RemoteRunsError('path-missing', `${checkpoint.path} is not a regular file on the remote side (${skipText(special)}); nothing to pull`, { path: checkpoint.path });
      throw new RemoteRunsError('path-missing', `${checkpoint.path} is no longer a file on the remote side`, { path: checkpoint.path });
    }
    const file = new PlannedFile(at, checkpoint.name, st.bytes, st.mtime, ABSENT);
    file.state = await localState(file.paths, file.remotePath, st, folders);
    files.push(file);
  } else {
    // Final weights live in the run folder beside everything else of the run: only their own files are theirs.
    const own = ownFilesListed(checkpoint) ? new Set(checkpoint.files.map((f) => f.name)) : undefined;
    if (own) {
      stats = stats.filter((st) => own.has(st.relative));
      skipped = skipped.filter((st) => own.has(st.relative));
    }
    // The names, for links to look up (made only when one is there: 100,000 files, 4 MB).
    let names: Set<string> | undefined;
    // Folder links that stay inside the checkpoint arrive as links: the folder they name is walked once, as itself.
    for (const d of Array.isArray(walk) || own ? [] : walk.dirLinks) {
      const file = new PlannedFile(at, checkpointRelative(d.relative), 0, 0, ABSENT, d.link);
      file.state = await linkState(file.localPath, d.link);
      files.push(file);
    }
    for (const st of stats) {
      const relative = checkpointRelative(st.relative);
      const link = st.link !== undefined ? linkWithin(relative, st.link, (names ??= new Set(stats.map((x) => x.relative)))) : undefined;
      const file = new PlannedFile(at, relative, link !== undefined ? 0 : st.bytes, st.mtime, ABSENT, link);
      file.state = link !== undefined ? await linkState(file.localPath, link) : await localState(file.paths, file.remotePath, st, folders);
      files.push(file);
    }
  }
  files.sort((a, b) => b.bytes - a.bytes || a.relative.localeCompare(b.relative));
  // The checkpoint's size is its bytes: a link kept as a link adds none.
  return { source, root, checkpoint: checkpointToPull(checkpoint), run: dest.run, localRoot, files, bytes: files.reduce((n, f) => n + f.bytes, 0), skipped };
}

const SKIP_WORDS: Record<SkippedEntry['why'], string> = {
  fifo: 'a FIFO (named pipe): reading it would wait for a writer',
  socket: 'a socket, not a file',
  'char-device': 'a character device: reading it may never end',
  'block-device': 'a block device, not a file',
  other: 'not a regular file',
  'broken-link': 'a symbolic link to nothing',
  'link-loop': 'a symbolic link loop (it leads back to itself)',
  'dir-link-outside': 'a link to a folder outside the checkpoint, not followed',
};

/** Why an entry was left out, in words (with the link it is, when it is one). */
export function skipText(s: SkippedEntry): string {
  const link = s.link !== undefined ? ` (link to ${JSON.stringify(s.link)})` : '';
  return `${SKIP_WORDS[s.why]}${s.why === 'char-device' || s.why === 'block-device' || s.why === 'fifo' || s.why === 'socket' || s.why === 'other' ? link : s.link !== undefined ? `: ${JSON.stringify(s.link)}` : ''}`;
}

/**
 * Where a checkpoint of run `run` lands under the download root: `<root>/<run>/<checkpoint name>` (a folder, or the
 * flat file itself). A run's name may be a path below its root (`expA/seed1`): one folder per part, each checked.
 */
export function checkpointLocalRoot(root: string, run: string, checkpoint: Pick<Checkpoint, 'name'>): string {
  const runDir = path.join(path.resolve(root), ...run.split('/').map((p) => safeSegment(p, 'run name')));
  return path.join(runDir, safeSegment(checkpoint.name, 'checkpoint name'));
}

/** Where the files of one plan live: the one copy of the strings every file's paths are derived from. */
interface PlanPlace {
  root: string;
  remoteRoot: string;
  localRoot: string;
  isDir: boolean;
}

const ABSENT: LocalState = Object.freeze({ kind: 'absent' });

/** A remote file's path below its checkpoint, each part checked as a local name (safeSegment); the path as it came. */
function checkpointRelative(relative: string): string {
  for (const p of relative.split('/')) safeSegment(p, 'file name');
  return relative;
}

/**
 * A file of a plan that holds its name, size, mtime and state, and derives its remote path, local path and state
 * paths (records.ts filePaths) from its name when asked. A plan of 100,000 files held those seven path strings per
 * file (about 700 bytes, most of the plan's 100 MB live heap at the limit of `--max-old-space-size=100`); derived,
 * they live only while a file is being worked on. An own-property copy (`{ ...file }`) loses them: use withState.
 */
class PlannedFile implements PlanFile {
  constructor(
    private readonly at: PlanPlace,
    readonly relative: string,
    readonly bytes: number,
    readonly mtime: number,
    public state: LocalState,
    symlink?: string,
  ) {
    if (symlink !== undefined) this.symlink = symlink;
  }

  declare readonly symlink?: string;

  get remotePath(): string {
    return this.at.isDir ? path.posix.join(this.at.remoteRoot, this.relative) : this.at.remoteRoot;
  }

  get localPath(): string {
    return this.at.isDir ? path.join(this.at.localRoot, ...this.relative.split('/')) : this.at.localRoot;
  }

  get paths(): FilePaths {
    return filePaths(this.at.root, this.localPath);
  }

  toJSON(): PlanFile {
    const { relative, remotePath, bytes, mtime, localPath, paths, state, symlink } = this;
    return { relative, remotePath, bytes, mtime, localPath, paths, state, ...(symlink !== undefined ? { symlink } : {}) };
  }
}

/** The same file with another local state (a plan's file is not changed; its derived paths stay derived). */
export function withState(file: PlanFile, state: LocalState): PlanFile {
  return Object.assign(Object.create(Object.getPrototypeOf(file) as object) as PlanFile, file, { state });
}

/**
 * Whether folders exist, each asked once. In a folder that does not exist no file does: a first pull of 100,000 files
 * in 100 folders asks 100 folders where it stat'ed 200,000 paths (a file and its `.part`). Only "missing" saves work;
 * a folder that exists (or cannot be read) sends each file to its own stat, which says what is wrong. A snapshot, as
 * the stats it stands for.
 */
export class FolderPresence {
  private readonly known = new Map<string, Promise<boolean>>();

  /** False only when the folder is not there (ENOENT, ENOTDIR). */
  mayHold(file: string): Promise<boolean> {
    const dir = path.dirname(file);
    let p = this.known.get(dir);
    if (!p) {
      p = fs.stat(dir).then(
        () => true,
        (e: NodeJS.ErrnoException) => !(e.code === 'ENOENT' || e.code === 'ENOTDIR'),
      );
      this.known.set(dir, p);
    }
    return p;
  }
}

/** What the local side holds for one remote file (`folders`: answers "its folder is not there" once per folder). */
export async function localState(paths: FilePaths, remotePath: string, remote: { bytes: number; mtime: number }, folders?: FolderPresence): Promise<LocalState> {
  if (folders && !(await folders.mayHold(paths.local)) && !(await folders.mayHold(paths.part)) && !(await folders.mayHold(paths.legacyDoneRecord))) return ABSENT;
  const existing = await statOrUndefined(paths.local);
  if (existing) {
    if (!existing.isFile()) return { kind: 'differs', reason: 'not-a-file', localBytes: 0 };
    const rec = await readDoneRecord(paths);
    if (!rec || rec.remotePath !== remotePath) return { kind: 'differs', reason: 'no-record', localBytes: existing.size };
    if (existing.size !== rec.localBytes || existing.mtimeMs !== rec.localMtimeMs) return { kind: 'differs', reason: 'local-changed', localBytes: existing.size };
    if (rec.remoteBytes !== remote.bytes || rec.remoteMtime !== remote.mtime) return { kind: 'differs', reason: 'remote-changed', localBytes: existing.size };
    return { kind: 'complete-verified', verified: rec.verified, ...(rec.sha256 ? { sha256: rec.sha256 } : {}) };
  }
  const part = await statOrUndefined(paths.part);
  if (!part) return { kind: 'absent' };
  const rec = await readPartRecord(paths);
  if (!rec || rec.remoteBytes !== remote.bytes || rec.remoteMtime !== remote.mtime || rec.remotePath !== remotePath) {
    return { kind: 'stale-partial', bytes: part.size };
  }
  // Only ranges the file really reaches count (a record written before a crash may claim more).
  const done = new RangeSet(rec.done.map(([s, e]) => [s, Math.min(e, part.size)] as const));
  return { kind: 'partial', bytes: done.total };
}

/**
 * A symlink's text when it arrives as a symlink: relative, and naming another file of the same checkpoint (it then
 * resolves locally exactly as remotely). Any other link (absolute, or out of the checkpoint, like a Hugging Face
 * cache's links into its blob store) is undefined: it arrives as the file it points to.
 */
export function linkWithin(relative: string, text: string, names: ReadonlySet<string>): string | undefined {
  if (text.startsWith('/') || text.includes('\0')) return undefined;
  const resolved = path.posix.normalize(path.posix.join(path.posix.dirname(relative), text));
  if (resolved === '..' || resolved.startsWith('../') || resolved === relative || !names.has(resolved)) return undefined;
  return text;
}

/** What is local for a file that arrives as a symlink. */
export async function linkState(localPath: string, text: string): Promise<LocalState> {
  let st: import('node:fs').Stats;
  try {
    st = await fs.lstat(localPath);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { kind: 'absent' };
    throw new RemoteRunsError('permission-denied', `Cannot read ${localPath}: ${(e as Error).message}`);
  }
  if (st.isSymbolicLink() && (await fs.readlink(localPath)) === text) return { kind: 'complete-verified', verified: 'sha256' };
  return { kind: 'differs', reason: st.isFile() || st.isSymbolicLink() ? 'no-record' : 'not-a-file', localBytes: st.isFile() ? st.size : 0 };
}

/** The longest name most local file systems hold (NAME_MAX of ext4, XFS, btrfs, APFS, NTFS in UTF-16 units aside). */
export const NAME_MAX_BYTES = 255;

/**
 * A remote name used as one local path segment: never empty, `.`/`..`, or holding a separator or NUL. Its bytes
 * are kept (a byte that is not UTF-8 is written as that byte, util/localFs.ts), so two remote names never share a
 * local one; a name longer than NAME_MAX_BYTES is refused here, naming it, before anything is written.
 */
export function safeSegment(name: string, what: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new RemoteRunsError('protocol', `Refusing a remote ${what} that is not a plain name: ${JSON.stringify(name)}`);
  }
  if (hasLoneSurrogate(name, false)) throw new RemoteRunsError('protocol', `Refusing a remote ${what} that is no byte string: ${displayName(name)}`);
  const bytes = encodeName(name).length;
  if (bytes > NAME_MAX_BYTES) {
    throw new RemoteRunsError('local-name', `The remote ${what} ${displayName(name)} is ${bytes} bytes long: a local file system holds names of at most ${NAME_MAX_BYTES}; nothing was written under another name`, { name });
  }
  return name;
}

async function statOrUndefined(p: string): Promise<import('node:fs').Stats | undefined> {
  try {
    return await fs.stat(p);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    // ENOTDIR: a part of the path is a file; the download says so when it creates the folders.
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw new RemoteRunsError('permission-denied', `Cannot read ${p}: ${(e as Error).message}`);
  }
}
