/**
 * `npm run demo`: start the demo training host, then open VS Code on it in an isolated profile.
 *
 *   npm run demo [-- --headless] [--port N] [--editor-port N] [--no-build] [--no-install]
 *
 * --headless starts only the host and prints how to reach it (ssh, the CLI). --port: the demo host's SSH port;
 * --editor-port: code-server's (both chosen freely by default). Without a desktop `code` and code-server the first
 * run installs code-server (test/vscode/setup.sh) unless --no-install. Ctrl-C (SIGINT) or SIGTERM stops
 * everything it started; the demo machine's processes end with it even if this process is killed outright.
 */
import { runProcessSync } from '../core/util/processes';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { demoEvalProfiles, startDemoHost, DEMO_HOST_NAME, type DemoHost } from './demoHost';
import { demoChildEnv, ensureEditor, findRepoRoot, stopDemoGroups, openCodeServer, openDesktop, type OpenedEditor } from './launch';
import { demoBaseDir, demoPaths } from './paths';
import { demoSettings, writeDemoProfile } from './profile';

const USAGE = 'usage: npm run demo [-- --headless] [--port N] [--editor-port N] [--no-build] [--no-install]';

/** Runs the demo until a signal; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let values: { headless?: boolean; port?: string; 'editor-port'?: string; 'no-build'?: boolean; 'no-install'?: boolean; help?: boolean };
  try {
    values = parseArgs({
      args: argv,
      options: { headless: { type: 'boolean' }, port: { type: 'string' }, 'editor-port': { type: 'string' }, 'no-build': { type: 'boolean' }, 'no-install': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
    }).values;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n${USAGE}\n`);
    return 1;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536)) {
    process.stderr.write(`--port: not a port number: ${values.port}\n`);
    return 1;
  }
  const editorPort = values['editor-port'] === undefined ? undefined : Number(values['editor-port']);
  if (editorPort !== undefined && !(Number.isInteger(editorPort) && editorPort > 0 && editorPort < 65536)) {
    process.stderr.write(`--editor-port: not a port number: ${values['editor-port']}\n`);
    return 1;
  }

  const base = demoBaseDir();
  const paths = demoPaths(base);
  const other = runningDemo(paths.stateFile);
  if (other) {
    process.stderr.write(`The demo is already running (pid ${other.pid}, port ${other.port}). Stop it first (Ctrl-C there, or kill ${other.pid}).\n`);
    return 1;
  }

  const repo = findRepoRoot();
  if (!values['no-build']) build(repo);

  const say = (line: string): void => void process.stdout.write(`${line}\n`);
  let host: DemoHost;
  try {
    host = await startDemoHost({ base, port, log: (l) => say(`[demo] ${l}`) });
  } catch (e) {
    process.stderr.write(`remote-runs demo: ${(e as Error).message}\n`);
    return 1;
  }
  fs.writeFileSync(paths.stateFile, JSON.stringify({ pid: process.pid, port: host.port }));

  let editor: OpenedEditor | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      say('Stopping the demo…');
      await editor?.stop().catch(() => undefined);
      // An editor still being installed or started: its processes end now (what it had started is then found gone).
      stopDemoGroups();
      await host.stop();
      fs.rmSync(paths.stateFile, { force: true });
      say('Demo stopped; nothing of it is left running.');
    })());
  const finished = new Promise<void>((resolve) => {
    const onSignal = (): void => void stop().then(resolve);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
    process.once('SIGHUP', onSignal);
  });

  say(`Demo training host "${DEMO_HOST_NAME}" ready on 127.0.0.1:${host.port}`);
  say(`  machine folder: ${host.paths.machine} (what the host's commands see as /)`);
  say(`  live run: pct:200 /workspace, a line a second, a checkpoint about every 2 minutes`);
  say(`  client key: ${host.keys.clientKeyPath}`);
  say(`  known_hosts: ${host.paths.knownHosts}`);
  say(`  CLI config: ${host.paths.cliConfig}`);
  // The README's CLI examples, as typed there (`npm link` puts remote-runs on PATH; the config names the host key).
  say(`  CLI: npm link (once, in ${repo}), then`);
  say(`    export REMOTE_RUNS_CONFIG=${host.paths.cliConfig}`);
  say(`    remote-runs ls ${DEMO_HOST_NAME}/pct:200`);
  say(`    remote-runs eval "demo drafter τ (SGLang)" ${DEMO_HOST_NAME}/pct:200/workspace/latest   (the drafter server, through the link)`);
  say(`  or:  ssh -i ${host.keys.clientKeyPath} -p ${host.port} -o UserKnownHostsFile=${host.paths.knownHosts} root@127.0.0.1`);

  if (!values.headless) {
    writeDemoProfile(paths, demoSettings(paths, host.hostConfig, demoEvalProfiles()), repo);
    try {
      const opened = await openEditor(repo, paths, say, { install: !values['no-install'], editorPort });
      if (stopping) {
        // Stopped while it was being opened: it goes too.
        await opened.stop();
        await finished;
        return 0;
      }
      editor = opened;
      say(`Opened ${editor.description}`);
      if ('url' in editor) say(`Open this URL in your browser: ${(editor as { url: string }).url}`);
    } catch (e) {
      if (stopping) {
        await finished;
        return 0;
      }
      say(`Could not open VS Code: ${(e as Error).message}`);
      say('The demo host keeps running; use the details above (or run with --headless).');
    }
  }
  say('Stop everything with Ctrl-C.');
  await finished;
  return 0;
}

async function openEditor(repo: string, paths: ReturnType<typeof demoPaths>, say: (line: string) => void, options: { install: boolean; editorPort?: number }): Promise<OpenedEditor> {
  const plan = await ensureEditor(repo, paths, say, { install: options.install });
  switch (plan.kind) {
    case 'desktop':
      return openDesktop(plan.executable, repo, paths);
    case 'code-server':
      return openCodeServer(plan.tool, repo, paths, say, options.editorPort);
    case 'none':
      throw new Error(plan.reason);
  }
}

/** Build the extension and the CLI, so VS Code and the printed CLI command run the current sources. */
function build(repo: string): void {
  const r = runProcessSync(process.execPath, ['esbuild.mjs'], { cwd: repo, encoding: 'utf8', env: demoChildEnv() });
  if (r.status !== 0) throw new Error(`build failed (node esbuild.mjs):\n${r.stderr || r.stdout}`);
}

/** The demo already running from this folder, if its process is alive. */
function runningDemo(stateFile: string): { pid: number; port: number } | undefined {
  try {
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { pid: number; port: number };
    process.kill(state.pid, 0);
    return state.pid === process.pid ? undefined : state;
  } catch {
    return undefined;
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`remote-runs demo: ${e instanceof Error ? e.stack : String(e)}\n`);
      process.exit(1);
    },
  );
}
