/**
 * The demo host gives the same listings as a real OpenSSH server over the same tree: the OpenSSH test host (with the
 * test pct/docker shims) is pointed at the demo machine's own folders, and the CLI's JSON for each target is
 * compared, paths taken relative to their run root where the two machines mount the tree in different places.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync, spawn } from 'node:child_process';
import { startDemoHost, type DemoHost } from '../../src/demo/demoHost';
import { startSshd, type TestSshd } from '../harness/sshd';
import { addDockerContainer, addPctContainer, createShimRoot, installShims } from '../shims/shimState';

const ROOT = path.join(__dirname, '..', '..');
const CLI = path.join(ROOT, 'dist', 'cli.js');
let demo: DemoHost;
let sshd: TestSshd;
let dir: string;
let config: string;
let knownHosts: string;

before(async () => {
  if (!fs.existsSync(CLI)) execFileSync(process.execPath, ['esbuild.mjs'], { cwd: ROOT, stdio: 'ignore' });
  if (!fs.existsSync('/workspace')) fs.mkdirSync('/workspace', { mode: 0o755 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-demo-cmp-'));
  demo = await startDemoHost({ base: path.join(dir, 'demo') });
  demo.trainer.stop(); // the same tree on both sides: no line may land between the two listings

  // The OpenSSH host's containers hold the demo's folders (symlinks, which the shims' bind mounts follow).
  const shimRoot = createShimRoot(path.join(dir, 'shim-state'));
  const bin = path.join(dir, 'bin');
  installShims(bin, shimRoot);
  const ct200 = addPctContainer(shimRoot, 200, { name: 'trainer-ct' });
  addPctContainer(shimRoot, 201, { name: 'old-ct', state: 'stopped' });
  const hf = addDockerContainer(shimRoot, 'hf-finetune', { state: 'running' });
  addDockerContainer(shimRoot, 'eval-old', { state: 'exited' });
  fs.rmSync(ct200.workspace, { recursive: true });
  fs.symlinkSync(demo.tree.live.dir, ct200.workspace);
  fs.rmSync(hf.workspace, { recursive: true });
  fs.symlinkSync(path.dirname(demo.tree.hf.dir), hf.workspace);
  execFileSync('chmod', ['-R', 'a+rX', dir]); // the OpenSSH host logs in as an unprivileged user

  sshd = await startSshd({ extraPath: [bin] });
  knownHosts = path.join(dir, 'known_hosts');
  fs.writeFileSync(knownHosts, `${sshd.knownHostsLine}\n${fs.readFileSync(demo.paths.knownHosts, 'utf8')}`);
  const machineRoot = path.join(demo.paths.machine, 'root');
  config = path.join(dir, 'config.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      hosts: [
        demo.hostConfig,
        { name: 'openssh', host: '127.0.0.1', port: sshd.port, user: sshd.user, identityFile: sshd.clientKeyPath },
        {
          name: 'openssh-host',
          host: '127.0.0.1',
          port: sshd.port,
          user: sshd.user,
          identityFile: sshd.clientKeyPath,
          targets: ['host'],
          runRoots: [path.join(demo.paths.machine, 'workspace'), path.join(machineRoot, 'runs'), path.join(machineRoot, 'checkpoints')],
        },
      ],
    }),
  );
});
after(async () => {
  await sshd?.stop();
  await demo?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The built CLI, run asynchronously (the demo server lives in this process). */
async function ls(address: string): Promise<any> {
  const child = spawn(process.execPath, [CLI, 'ls', address, '--json', '--config', config, '--known-hosts', knownHosts], {
    env: { PATH: process.env.PATH, HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  assert.equal(code, 0, `${address}: ${stderr}`);
  return JSON.parse(stdout);
}

/** Runs and roots with each path made relative to its root, so two mount places compare equal. */
function relative(listing: { runs: any[]; roots: any[] }): unknown {
  const rootOf = (p: string): any => listing.roots.filter((r) => p === r.path || p.startsWith(`${r.path}/`)).sort((a, b) => b.path.length - a.path.length)[0];
  const rel = (p: string): string => {
    const r = rootOf(p);
    return `${path.basename(r.path)}:${p.slice(r.path.length)}`;
  };
  return {
    runs: listing.runs
      .map((run) => ({
        ...run,
        path: rel(run.path),
        metrics: run.metrics.map(rel),
        checkpoints: run.checkpoints.map((c: any) => ({ ...c, path: rel(c.path) })),
      }))
      .sort((a, b) => (a.path < b.path ? -1 : 1)),
    roots: listing.roots.map((r) => ({ ...r, root: path.basename(r.path), path: undefined, message: undefined })).sort((a, b) => (a.root < b.root ? -1 : 1)),
  };
}

test('targets: the same containers in the same states', async () => {
  const a = await ls('demo');
  const b = await ls('openssh');
  assert.deepEqual(a.targets, b.targets);
  assert.equal(a.targets.length, 5);
});

for (const target of ['pct:200', 'docker:hf-finetune']) {
  test(`${target}: the same runs and checkpoints, byte for byte`, async () => {
    const a = await ls(`demo/${target}`);
    const b = await ls(`openssh/${target}`);
    assert.ok(a.runs.length > 0);
    assert.deepEqual(a.runs, b.runs);
    // `~` roots differ by login, not by server: the demo logs in as root (HOME=/root), the OpenSSH host as an
    // unprivileged user whose HOME is elsewhere and who may not enter /root. Absolute roots must match exactly.
    const absolute = (roots: any[]): unknown[] => roots.filter((r) => r.root.startsWith('/')).map((r) => ({ ...r, message: undefined }));
    assert.deepEqual(absolute(a.roots), absolute(b.roots));
    assert.equal(absolute(a.roots).length, 1);
  });
}

test('host: the same runs and empty states under both mount places', async () => {
  const a = await ls('demo/host');
  const b = await ls('openssh-host/host');
  assert.deepEqual(a.runs.map((r: any) => r.name).sort(), ['baseline-ref', 'checkpoints']);
  assert.deepEqual(relative(a), relative(b));
});
