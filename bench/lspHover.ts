/**
 * How fast the language server answers a hover, alone and while it analyses big files: the real server
 * (dist/lspServer.js, as the extension starts it) over stdio, a client that answers its requests from an in-memory
 * remote (the story's run: seven step_N/checkpoint.pt folders), a small script hovered again and again.
 *
 * Baseline, measured in the same run: the same hover with nothing else open. Then the same hover, and one on line
 * 99,000 of a big script, while three 5 MB scripts of 100,000 remote paths each are analysed. The ratio is the cost
 * of the big files to a hover (issue 35 asks for hovers within 200 ms whatever else is open).
 *
 * Usage: node --import tsx bench/lspHover.ts [--n 40]   (build first: node esbuild.mjs)
 */
import { spawn } from 'node:child_process';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { createProtocolConnection, StreamMessageReader, StreamMessageWriter, type Diagnostic } from 'vscode-languageserver-protocol/node';
import type { ConfigResult, ListParams } from '../src/shared/lspProtocol';
import { listFake, storyFs } from '../test/builders/fakeRemote';
import { ms, stats, table } from './util';

const args = process.argv.slice(2);
const N = Number(args[args.indexOf('--n') + 1] ?? 40) || 40;
const REPO = path.join(__dirname, '..');
const NOW = Date.now();
// The story's run, listed by the same fake remote as the server's protocol test.
const files = storyFs(NOW);

function bigScript(tag: string): string {
  const out = ['# remote-runs: kpro6/pct:200'];
  for (let i = 1; i < 100_000; i++) out.push(i === 99_000 ? `cp /workspace/checkpoints/step_22000/checkpoint.pt /tmp/${tag}_${i}.pt` : `cp /workspace/checkpoints/step_${i}_${tag}/checkpoint.pt /tmp/${tag}_${i}.pt`);
  return out.join('\n') + '\n';
}

async function main(): Promise<void> {
  const server = spawn(process.execPath, [path.join(REPO, 'dist', 'lspServer.js'), '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const conn = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  const config: ConfigResult = { hosts: [{ name: 'kpro6', address: '10.1.2.6', user: 'root', roots: ['/workspace'] }], mappings: [] };
  conn.onRequest('remoteRuns/config', () => config);
  conn.onRequest('remoteRuns/places', () => ({ places: [{ host: 'kpro6', target: 'pct:200' }] }));
  conn.onRequest('remoteRuns/list', (p: ListParams) => listFake(files, p, NOW));
  conn.onRequest('remoteRuns/latestMetrics', () => ({ ok: false, kind: 'path-missing', message: 'no log' }));
  conn.onRequest('remoteRuns/inspectSummary', () => ({ ok: false, kind: 'permission-denied', message: 'not read here' }));
  const versions = new Map<string, number | undefined>();
  conn.onNotification('textDocument/publishDiagnostics', (p: { uri: string; version?: number; diagnostics: Diagnostic[] }) => versions.set(p.uri, p.version));
  conn.listen();
  await conn.sendRequest('initialize', { processId: process.pid, rootUri: null, capabilities: {} });
  conn.sendNotification('initialized', {});

  let nextDoc = 0;
  const open = async (text: string): Promise<string> => {
    const uri = `file:///bench/doc${nextDoc++}.sh`;
    await conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'shellscript', version: 1, text } });
    return uri;
  };
  const hover = async (uri: string, line: number, character: number): Promise<number> => {
    const t = performance.now();
    await conn.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line, character } });
    return performance.now() - t;
  };
  const small = await open('# remote-runs: kpro6/pct:200\nls /workspace/checkpoints/step_20000/checkpoint.pt\n');
  while (versions.get(small) !== 1) await new Promise((r) => setTimeout(r, 10));
  await hover(small, 1, 6); // the first hover lists the folder; the samples read what it listed
  const alone: number[] = [];
  for (let i = 0; i < N; i++) alone.push(await hover(small, 1, 6));

  const big = ['a', 'b', 'c'].map(bigScript);
  const bigUris: string[] = [];
  for (const text of big) bigUris.push(await open(text));
  const analysed = (): boolean => bigUris.every((u) => versions.get(u) === 1);
  const busySmall: number[] = [];
  const busyBig: number[] = [];
  const t0 = performance.now();
  while (!analysed()) {
    busySmall.push(await hover(small, 1, 6));
    busyBig.push(await hover(bigUris[1], 99_000, 6));
  }
  const analysisMs = performance.now() - t0;
  const a = stats(alone);
  const s = stats(busySmall);
  const b = stats(busyBig);
  console.log(`load ${os.loadavg()[0].toFixed(1)}; three 5 MB scripts analysed in ${ms(analysisMs)} ms`);
  console.log(
    table(
      ['hover', 'n', 'median ms', 'min-max ms', 'median / alone'],
      [
        ['small script, nothing else open (baseline)', String(a.n), ms(a.median), `${ms(a.min)}-${ms(a.max)}`, '1.00×'],
        ['small script, three big ones being analysed', String(s.n), ms(s.median), `${ms(s.min)}-${ms(s.max)}`, `${(s.median / a.median).toFixed(2)}×`],
        ['line 99,000 of a big one, being analysed', String(b.n), ms(b.median), `${ms(b.min)}-${ms(b.max)}`, `${(b.median / a.median).toFixed(2)}×`],
      ],
    ),
  );
  await conn.sendRequest('shutdown');
  conn.sendNotification('exit');
  conn.dispose();
  server.kill();
}

void main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
