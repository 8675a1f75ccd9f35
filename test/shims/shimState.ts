/**
 * Builds the state the TEST shims `pct` and `docker` read (layout in shim-lib.sh), and installs the shims into a
 * bin folder with a `shim-root` file beside them, so they find their state even when sshd strips the environment.
 * Fixture trees go into the returned `workspace` folders (see test/fixtures/generate.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export const SHIMS_DIR = __dirname;

export interface ShimContainer {
  /** The container's own folder: state files and rootfs/. */
  dir: string;
  /** What the container sees as `/workspace`. */
  workspace: string;
  /** The container's root filesystem: each top-level folder here replaces the host's inside the container. */
  rootfs: string;
}

/** The mount point the shims bind each container's /workspace onto (must exist on the test host for shim-enter.sh's fast path). */
export function ensureWorkspaceMountPoint(): void {
  if (!fs.existsSync('/workspace')) fs.mkdirSync('/workspace', { mode: 0o755 });
}

/** Create an empty state root (pct/ and docker/ with no containers). */
export function createShimRoot(root: string, options: { node?: string } = {}): string {
  fs.mkdirSync(path.join(root, 'pct'), { recursive: true });
  fs.mkdirSync(path.join(root, 'docker'), { recursive: true });
  fs.mkdirSync(path.join(root, '.mnt'), { recursive: true });
  if (options.node) fs.writeFileSync(path.join(root, 'node'), `${options.node}\n`);
  return root;
}

/** A Proxmox container `vmid` with a name and a state. */
export function addPctContainer(
  root: string,
  vmid: number | string,
  options: { name?: string; state?: 'running' | 'stopped'; lock?: string } = {},
): ShimContainer {
  const dir = path.join(root, 'pct', String(vmid));
  return writeContainer(dir, { state: options.state ?? 'running', name: options.name ?? `ct${vmid}`, lock: options.lock });
}

/** A Docker container `name`; state as docker reports it (running, exited, created, paused, …). */
export function addDockerContainer(
  root: string,
  name: string,
  options: { state?: string; image?: string; status?: string } = {},
): ShimContainer {
  const dir = path.join(root, 'docker', name);
  return writeContainer(dir, { state: options.state ?? 'running', image: options.image, status: options.status });
}

/** Make every docker command fail as when the daemon is down or its socket refuses this user. */
export function setDockerDaemon(root: string, mode: 'up' | 'down' | 'denied'): void {
  const file = path.join(root, 'docker', '.daemon');
  if (mode === 'up') fs.rmSync(file, { force: true });
  else fs.writeFileSync(file, `${mode}\n`);
}

/** Set a container's state file (`running`, `stopped`, `exited`…). */
export function setContainerState(container: ShimContainer, state: string): void {
  fs.writeFileSync(path.join(container.dir, 'state'), `${state}\n`);
}

/**
 * Copy the shims (pct, docker, shim-lib.sh, shim-enter.sh) into `binDir` and write `binDir/shim-root`. Copies, not links:
 * an unprivileged test user may not be able to read the repository.
 */
export function installShims(binDir: string, root: string): { pct: string; docker: string } {
  fs.mkdirSync(binDir, { recursive: true });
  for (const name of ['pct', 'docker', 'shim-lib.sh', 'shim-enter.sh']) {
    fs.copyFileSync(path.join(SHIMS_DIR, name), path.join(binDir, name));
    fs.chmodSync(path.join(binDir, name), name.endsWith('.sh') ? 0o644 : 0o755);
  }
  fs.writeFileSync(path.join(binDir, 'shim-root'), `${path.resolve(root)}\n`);
  return { pct: path.join(binDir, 'pct'), docker: path.join(binDir, 'docker') };
}

function writeContainer(dir: string, fields: Record<string, string | undefined>): ShimContainer {
  const rootfs = path.join(dir, 'rootfs');
  const workspace = path.join(rootfs, 'workspace');
  fs.mkdirSync(workspace, { recursive: true });
  for (const [key, value] of Object.entries(fields)) {
    if (value !== undefined) fs.writeFileSync(path.join(dir, key), `${value}\n`);
  }
  return { dir, workspace, rootfs };
}
