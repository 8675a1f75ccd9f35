/**
 * The extension's answers to the language server, against a real OpenSSH server with the pct/docker shims: one
 * listing per question through the shared connection, every empty case told apart, hostile names intact, answers
 * cached until invalidated, no connection opened just to guess a place. Then the real server process answered by
 * them: the story's command on the test host gets its diagnostic.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createProtocolConnection, StreamMessageReader, StreamMessageWriter, type Diagnostic, type Hover, type ProtocolConnection } from 'vscode-languageserver-protocol/node';
import { hasUnsafe } from '../../src/shared/display';
import { mdCode } from '../../src/lsp/markdown';
import { renderMarkdown } from '../harness/markdown';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { HostDirectory } from '../../src/core/hosts';
import { RemoteRunsCore } from '../../src/core/service';
import type { Executor } from '../../src/core/remote';
import type { HostConfig } from '../../src/core/types';
import { RemoteAnswers } from '../../src/extension/lsp/answers';
import type { ListParams, ListResult, PathMapping, Place } from '../../src/shared/lspProtocol';
import { startTestHost, type TestHost } from '../harness/testHost';
import { eventually } from '../harness/assertKind';
import { testPool } from '../builders/pool';

let host: TestHost;
let pool: ConnectionPool;
let answers: RemoteAnswers;
let commands = 0;
const known: Place[] = [];
const mappings: PathMapping[] = [];

before(async () => {
  host = await startTestHost();
  const hosts: HostConfig[] = [host.hostConfig('testbox', { runRoots: ['/workspace', host.paths.runs, host.dir] })];
  pool = testPool(host, { connectTimeoutMs: 5000 });
  const dir = new HostDirectory({ hosts: () => hosts, includeSshConfigHosts: () => false, home: host.clientHome, localUser: 'nobody' });
  const core = new RemoteRunsCore({
    hosts: () => hosts,
    executorFor: (h): Executor => {
      const exec = pool.executor(dir.resolve(h), { idempotent: true });
      return { exec: (line, opts) => (commands++, exec.exec(line, opts)) };
    },
  });
  answers = new RemoteAnswers({
    core,
    hosts: () => hosts,
    isConnected: (name) => pool.getState(name).kind === 'connected',
    knownPlaces: () => known,
    mappings: () => mappings,
  });
});

after(async () => {
  pool?.dispose();
  await host?.stop();
});

const pct200: Place = { host: 'testbox', target: 'pct:200' };

function ok(r: ListResult): Extract<ListResult, { ok: true }> {
  assert.ok(r.ok, JSON.stringify(r));
  return r;
}

test('no place is offered before the host is connected: a bare path never opens a connection', async () => {
  assert.deepEqual((await answers.places()).places, []);
  assert.equal(host.sshd.acceptedLogins(), 0);
});

test('a run root inside a container, listed as deep as the tree lists it, in one command', async () => {
  const before = commands;
  const r = ok(await answers.list({ place: pct200, path: '/workspace', depth: 5 }));
  assert.equal(commands - before, 1);
  assert.equal(r.state, 'ok');
  const steps = r.entries.filter((e) => /^checkpoints\/step_\d+$/.test(e.rel)).map((e) => Number(e.rel.split('_')[1])).sort((a, b) => a - b);
  assert.deepEqual(steps, host.storySteps);
  const last = r.entries.find((e) => e.rel === `checkpoints/step_${host.storySteps.at(-1)}/checkpoint.pt`);
  assert.equal(last?.type, 'f');
  assert.ok(last.bytes > 3e9, `the sparse 3 GB checkpoint: ${last.bytes}`);
  assert.ok(!r.entries.some((e) => e.rel.endsWith('.pt') && !e.rel.includes('/')), 'no *.pt at the top (the story)');
  // Asked again: from the cache, no command.
  await answers.list({ place: pct200, path: '/workspace', depth: 5 });
  assert.equal(commands - before, 1);
  answers.invalidate(pct200);
  await answers.list({ place: pct200, path: '/workspace', depth: 5 });
  assert.equal(commands - before, 2, 'invalidated: listed again');
});

test('places now include the connected host\'s running targets, not the stopped ones', async () => {
  const places = (await answers.places()).places.map((p) => p.target).sort();
  assert.deepEqual(places, ['docker:trainer', 'host', 'pct:200']);
});

test('missing, a file, unreadable and hostile names: each its own state, names intact through the quoting', async () => {
  const bare: Place = { host: 'testbox', target: 'host' };
  assert.equal(ok(await answers.list({ place: bare, path: host.paths.missing, depth: 1 })).state, 'path-missing');
  assert.equal(ok(await answers.list({ place: bare, path: host.paths.file, depth: 1 })).state, 'not-a-directory');
  assert.equal(ok(await answers.list({ place: bare, path: host.paths.unreadable, depth: 1 })).state, 'permission-denied');
  const hostile = ok(await answers.list({ place: bare, path: host.paths.hostile, depth: 1 }));
  assert.deepEqual(hostile.entries.map((e) => e.rel).sort(), [...host.hostileNames].sort());
  const weird = ok(await answers.list({ place: bare, path: `${host.paths.runs}/it's $(touch /tmp/rr-pwned) "x"`, depth: 1 }));
  assert.equal(weird.state, 'path-missing', 'a hostile path is a path, not a command');
  assert.ok(!fs.existsSync('/tmp/rr-pwned'), 'the $(…) in the path never ran');
});

test('a stopped container and a host that is not configured fail with their kind, and are not retried at once', async () => {
  const before = commands;
  const stopped = await answers.list({ place: { host: 'testbox', target: 'pct:201' }, path: '/workspace', depth: 5 });
  assert.deepEqual([stopped.ok, !stopped.ok && stopped.kind], [false, 'container-stopped']);
  await answers.list({ place: { host: 'testbox', target: 'pct:201' }, path: '/workspace', depth: 5 });
  assert.equal(commands - before, 1, 'the failure answers until invalidated');
  const unknown = await answers.list({ place: { host: 'nope', target: 'host' }, path: '/x', depth: 1 });
  assert.deepEqual([unknown.ok, !unknown.ok && unknown.kind], [false, 'not-found']);
});

test("a run's latest logged values come from the last few KB of its JSONL log", async () => {
  const r = await answers.latestMetrics({ place: pct200, path: '/workspace/logs/train.jsonl' });
  assert.ok(r.ok, JSON.stringify(r));
  const log = fs.readFileSync(path.join(host.containers.pct200.workspace, 'logs', 'train.jsonl'), 'utf8').trim().split('\n');
  const last = JSON.parse(log[log.length - 1]);
  assert.equal(r.step, last.step);
  assert.deepEqual(r.values, { loss: last.loss, acc: last.acc, lr: last.lr, streak: last.streak });
  const missing = await answers.latestMetrics({ place: pct200, path: '/workspace/logs/nope.jsonl' });
  assert.deepEqual([missing.ok, !missing.ok && missing.kind], [false, 'command-failed']);
});

test("a checkpoint's hover summary comes from its headers, read once while it does not change", async () => {
  const dir = path.join(host.containers.pct200.workspace, 'inspect-lsp', 'step_200');
  fs.mkdirSync(dir, { recursive: true });
  const src = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect', 'train_state.pt');
  fs.copyFileSync(src, path.join(dir, 'train_state.pt'));
  fs.chmodSync(path.dirname(dir), 0o755);
  fs.chmodSync(dir, 0o755);
  fs.chmodSync(path.join(dir, 'train_state.pt'), 0o644);
  const st = fs.statSync(path.join(dir, 'train_state.pt'));
  const file = { name: 'train_state.pt', path: '/workspace/inspect-lsp/step_200/train_state.pt', bytes: st.size, mtime: Math.round(st.mtimeMs) };
  const checkpoint = { path: '/workspace/inspect-lsp/step_200', isDir: true, bytes: st.size, mtime: file.mtime, files: [file] };
  const before = commands;
  const r = await answers.inspectSummary({ place: pct200, checkpoint });
  assert.deepEqual(r, { ok: true, summary: '266 params · fp32 · 18 tensors · optimizer: AdamW state (exp_avg, exp_avg_sq) · step 20000' });
  assert.equal(commands - before, 1, 'one remote command');
  assert.deepEqual(await answers.inspectSummary({ place: pct200, checkpoint }), r);
  assert.equal(commands - before, 1, 'unchanged: from the cache');
  const gone = await answers.inspectSummary({ place: { host: 'testbox', target: 'pct:201' }, checkpoint });
  assert.deepEqual([gone.ok, !gone.ok && gone.kind], [false, 'container-stopped']);
});

test('a cancelled listing answers `cancelled` and is not kept', async () => {
  const controller = new AbortController();
  controller.abort();
  const r = await answers.list({ place: { host: 'testbox', target: 'docker:trainer' }, path: '/workspace', depth: 5 }, controller.signal);
  assert.deepEqual([r.ok, !r.ok && r.kind], [false, 'cancelled']);
  assert.equal(ok(await answers.list({ place: { host: 'testbox', target: 'docker:trainer' }, path: '/workspace', depth: 5 })).state, 'ok');
});

/** The real language server process, its requests answered by `answers` (as the extension does), for `run`. */
async function withServer(run: (conn: ProtocolConnection, published: Map<string, Diagnostic[]>) => Promise<void>): Promise<void> {
  const repo = path.join(__dirname, '..', '..');
  const server = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'src', 'lsp', 'server.ts'), '--stdio'], { cwd: repo, stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  const published = new Map<string, Diagnostic[]>();
  conn.onRequest('remoteRuns/config', () => answers.config());
  conn.onRequest('remoteRuns/places', () => answers.places());
  conn.onRequest('remoteRuns/list', (p: ListParams) => answers.list(p));
  conn.onNotification('textDocument/publishDiagnostics', (p: { uri: string; diagnostics: Diagnostic[] }) => published.set(p.uri, p.diagnostics));
  conn.listen();
  try {
    await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
    conn.sendNotification('initialized', {});
    await run(conn, published);
  } finally {
    conn.dispose();
    server.kill();
  }
}

test("the real server answered by these: the story's command on the test host", async () => {
  await withServer(async (conn, published) => {
    const uri = 'file:///ws/story.sh';
    const text = `ssh testbox 'pct exec 200 -- ls -la /workspace/checkpoints/*.pt 2>/dev/null || echo "no checkpoints"'\n`;
    await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'shellscript', version: 1, text } });
    await eventually(() => published.has(uri), 'diagnostics for the story');
    const messages = published.get(uri)!.map((d) => d.message);
    const n = host.storySteps.length;
    assert.equal(messages[0], `\`/workspace/checkpoints/*.pt\` matches nothing on testbox/pct:200; ${n} checkpoints are in \`step_N/checkpoint.pt\` one level down`);
    assert.match(messages[1], /prints "no checkpoints" for every failure alike/);
  });
});

test('remote names that hold controls, bidi overrides and markdown: escaped in the hover and the diagnostic, never a link', async () => {
  const dir = path.join(host.dir, 'lsp-hostile');
  const names = ['[x](command:workbench.action.quit)', 'esc\u001b]52;c;Y3VybCBldmlsfHNo\u0007.pt', 'rtl\u202egnp.pt', 'back`tick` .pt', '<img src=x onerror=alert(1)>'];
  fs.mkdirSync(dir, { recursive: true });
  for (const n of names) fs.writeFileSync(path.join(dir, n), 'x');
  fs.chmodSync(dir, 0o755);
  await withServer(async (conn, published) => {
    const uri = 'file:///ws/hostile.sh';
    const text = `ssh testbox ls ${dir}/* ${dir}/nope\n`;
    await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'shellscript', version: 1, text } });
    await eventually(() => published.has(uri), 'diagnostics for the hostile listing');
    const [missing] = published.get(uri)!;
    assert.ok(!hasUnsafe(missing.message), `no control or bidi character in the diagnostic: ${JSON.stringify(missing.message)}`);
    assert.match(missing.message, /holds 5 entries: .*esc\\x1b\]52;c;Y3VybCBldmlsfHNo\\x07\.pt/);
    assert.match(missing.message, /rtl\\u202egnp\.pt/);
    const at = text.indexOf(`${dir}/*`) + dir.length + 1;
    const hover = (await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 0, character: at } })) as Hover | null;
    const value = hover && typeof hover.contents === 'object' && 'value' in hover.contents ? hover.contents.value : '';
    assert.match(value, /matches 5 entries on testbox\/host/, value);
    assert.ok(!hasUnsafe(value.replace(/\n/g, '')), `no control or bidi character in the hover: ${JSON.stringify(value)}`);
    // Each name is one code span that shows exactly what the display function shows.
    for (const n of names) assert.ok(value.includes(`- ${mdCode(n)} — `), `${JSON.stringify(n)} as ${mdCode(n)} in ${value}`);
    const html = renderMarkdown(value);
    assert.doesNotMatch(html, /<(a|img)[\s>]/, `no link or image: ${html}`);
    assert.ok(value.includes('``back`tick` .pt``'), 'a fence longer than the backticks inside');
  });
});
