/**
 * A read-only SFTP subsystem over the demo machine's files: enough for downloads (open, read, stat, list,
 * realpath); writes are refused with PERMISSION_DENIED. Paths are the machine's own (`/workspace/…`), resolved
 * under `/proc/<pid 1>/root`, i.e. the very tree its commands see, with no way above its `/`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { utils, type SFTPWrapper } from 'ssh2';

const { OPEN_MODE, STATUS_CODE } = utils.sftp;

interface OpenFile {
  kind: 'file' | 'dir';
  fd?: number;
  path: string;
  entries?: string[];
}

/** The machine path (`/a/b`) for a client path, relative ones against `/root` like sshd's home. */
export function machinePath(clientPath: string): string {
  return path.posix.resolve('/root', clientPath || '.');
}

/** Serve SFTP requests on `sftp` from the tree under `root`. */
export function serveSftp(sftp: SFTPWrapper, root: string): void {
  const handles = new Map<number, OpenFile>();
  let next = 1;
  const real = (p: string): string => root + machinePath(p);
  const newHandle = (f: OpenFile): Buffer => {
    const id = next++;
    handles.set(id, f);
    const b = Buffer.alloc(4);
    b.writeUInt32BE(id, 0);
    return b;
  };
  const get = (h: Buffer): OpenFile | undefined => (h.length === 4 ? handles.get(h.readUInt32BE(0)) : undefined);
  const fail = (reqId: number, e: unknown): void => {
    const code = (e as NodeJS.ErrnoException).code;
    const status = code === 'ENOENT' || code === 'ENOTDIR' ? STATUS_CODE.NO_SUCH_FILE : code === 'EACCES' || code === 'EPERM' || code === 'EROFS' ? STATUS_CODE.PERMISSION_DENIED : STATUS_CODE.FAILURE;
    // Never the real path (`/proc/<pid>/root/…`) in a message: the client only knows the machine's paths.
    const text = status === STATUS_CODE.NO_SUCH_FILE ? 'No such file' : status === STATUS_CODE.PERMISSION_DENIED ? 'Permission denied' : 'Failure';
    sftp.status(reqId, status, text);
  };

  sftp.on('OPEN', (reqId, filename, flags) => {
    if (flags & (OPEN_MODE.WRITE | OPEN_MODE.APPEND | OPEN_MODE.CREAT | OPEN_MODE.TRUNC)) {
      return sftp.status(reqId, STATUS_CODE.PERMISSION_DENIED, 'the demo host is read-only over SFTP');
    }
    fs.open(real(filename), 'r', (err, fd) => (err ? fail(reqId, err) : sftp.handle(reqId, newHandle({ kind: 'file', fd, path: filename }))));
  });
  sftp.on('READ', (reqId, handle, offset, length) => {
    const f = get(handle);
    if (f?.kind !== 'file' || f.fd === undefined) return sftp.status(reqId, STATUS_CODE.FAILURE, 'bad handle');
    const buf = Buffer.alloc(Math.min(length, 256 * 1024));
    fs.read(f.fd, buf, 0, buf.length, offset, (err, n) => {
      if (err) return fail(reqId, err);
      if (n === 0) return sftp.status(reqId, STATUS_CODE.EOF);
      sftp.data(reqId, buf.subarray(0, n));
    });
  });
  sftp.on('FSTAT', (reqId, handle) => {
    const f = get(handle);
    if (!f) return sftp.status(reqId, STATUS_CODE.FAILURE, 'bad handle');
    const done = (err: NodeJS.ErrnoException | null, st: fs.Stats): void => (err ? fail(reqId, err) : sftp.attrs(reqId, attrs(st)));
    if (f.fd !== undefined) fs.fstat(f.fd, done);
    else fs.stat(real(f.path), done);
  });
  for (const op of ['STAT', 'LSTAT'] as const) {
    sftp.on(op, (reqId: number, p: string) => {
      const fn = op === 'STAT' ? fs.stat : fs.lstat;
      fn(real(p), (err, st) => (err ? fail(reqId, err) : sftp.attrs(reqId, attrs(st))));
    });
  }
  sftp.on('REALPATH', (reqId, p) => {
    const mp = machinePath(p);
    sftp.name(reqId, [{ filename: mp, longname: mp, attrs: {} as never }]);
  });
  sftp.on('OPENDIR', (reqId, p) => {
    fs.readdir(real(p), (err, names) => (err ? fail(reqId, err) : sftp.handle(reqId, newHandle({ kind: 'dir', path: machinePath(p), entries: ['.', '..', ...names] }))));
  });
  sftp.on('READDIR', (reqId, handle) => {
    const f = get(handle);
    if (f?.kind !== 'dir' || !f.entries) return sftp.status(reqId, STATUS_CODE.FAILURE, 'bad handle');
    const batch = f.entries.splice(0, 100);
    if (batch.length === 0) return sftp.status(reqId, STATUS_CODE.EOF);
    sftp.name(
      reqId,
      batch.map((name) => {
        let st: fs.Stats | undefined;
        try {
          st = fs.lstatSync(real(path.posix.join(f.path, name)));
        } catch {
          st = undefined;
        }
        const a = st ? attrs(st) : ({} as never);
        return { filename: name, longname: longName(name, st), attrs: a };
      }),
    );
  });
  sftp.on('CLOSE', (reqId, handle) => {
    const f = get(handle);
    if (!f) return sftp.status(reqId, STATUS_CODE.FAILURE, 'bad handle');
    handles.delete(handle.readUInt32BE(0));
    if (f.fd !== undefined) fs.close(f.fd, () => sftp.status(reqId, STATUS_CODE.OK));
    else sftp.status(reqId, STATUS_CODE.OK);
  });
  for (const op of ['WRITE', 'FSETSTAT', 'SETSTAT', 'REMOVE', 'RMDIR', 'MKDIR', 'RENAME', 'SYMLINK'] as const) {
    sftp.on(op, (reqId: number) => sftp.status(reqId, STATUS_CODE.PERMISSION_DENIED, 'the demo host is read-only over SFTP'));
  }
  sftp.on('READLINK', (reqId, p) => {
    fs.readlink(real(p), (err, target) => (err ? fail(reqId, err) : sftp.name(reqId, [{ filename: target, longname: target, attrs: {} as never }])));
  });
  sftp.on('close', () => {
    for (const f of handles.values()) if (f.fd !== undefined) fs.close(f.fd, () => undefined);
    handles.clear();
  });
}

function attrs(st: fs.Stats): { mode: number; uid: number; gid: number; size: number; atime: number; mtime: number } {
  return { mode: st.mode, uid: 0, gid: 0, size: st.size, atime: Math.floor(st.atimeMs / 1000), mtime: Math.floor(st.mtimeMs / 1000) };
}

/** An `ls -l` style line, as OpenSSH's server sends in READDIR. */
function longName(name: string, st: fs.Stats | undefined): string {
  if (!st) return name;
  const type = st.isDirectory() ? 'd' : st.isSymbolicLink() ? 'l' : '-';
  const bits = 'rwxrwxrwx'.split('').map((c, i) => (st.mode & (1 << (8 - i)) ? c : '-')).join('');
  const date = new Date(st.mtimeMs).toISOString().slice(0, 16).replace('T', ' ');
  return `${type}${bits} 1 root root ${String(st.size).padStart(12)} ${date} ${name}`;
}
