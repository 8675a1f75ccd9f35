/**
 * Times the listing parser as it ships: bench/listing.ts bundles this file with esbuild (as esbuild.mjs bundles the
 * extension) and runs it with plain `node`, so the figure has none of tsx's per-import getters and name helpers
 * (which make the same parse ~1.8x slower under `node --import tsx`).
 *
 * Usage: node probe.js OUTPUT_FILE ROOT MAX_ENTRIES N  → prints {"median":ms,"min":ms,"tail":ms|null,"checkpoints":n} on stdout
 * (tail: the median time from the last 32 KiB to the parsed listing, when the reader read the rest as it arrived).
 */
import * as fs from 'node:fs';
import { listRunsCommand } from '../src/core/discovery/listScript';

const [file, root, maxEntries, n] = process.argv.slice(2);
const stdout = fs.readFileSync(file);
const command = listRunsCommand([root], { maxEntries: Number(maxEntries) });
const result = { stdout, stderr: Buffer.alloc(0), code: 0, truncated: false };
const N = Number(n);
for (let i = 0; i < 5; i++) command.parse(result); // warm up the JIT, as a long-lived extension host is
const ms: number[] = [];
let entries = 0;
for (let i = 0; i < N; i++) {
  const t = process.hrtime.bigint();
  const parsed = command.parse(result);
  ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  entries = parsed.roots.reduce((sum, r) => sum + (r.state === 'ok' ? r.runs.reduce((s, run) => s + run.checkpoints.length, 0) : 0), 0);
}
ms.sort((a, b) => a - b);
// What is left once the last chunk arrives, when the reader kept up with the ones before (it reads while they
// arrive): the last 32 KiB (an ssh2 packet) and finding the runs. Only for a command with a reader.
const tail: number[] = [];
const reader = command.reader;
if (reader) {
  const cut = Math.max(0, stdout.length - 32 * 1024);
  for (let i = 0; i < N + 5; i++) {
    const r = reader();
    for (let at = 0; at < cut; at += 32 * 1024) r.push(stdout.subarray(at, Math.min(cut, at + 32 * 1024)));
    const t = process.hrtime.bigint();
    r.push(stdout.subarray(cut));
    r.finish(result);
    if (i >= 5) tail.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  tail.sort((a, b) => a - b);
}
const tailMedian = tail.length ? tail[Math.floor(tail.length / 2)] : null;
process.stdout.write(`${JSON.stringify({ median: ms[Math.floor(ms.length / 2)], min: ms[0], tail: tailMedian, checkpoints: entries })}\n`);
