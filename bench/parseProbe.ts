/**
 * Times the listing parser as it ships: bench/listing.ts bundles this file with esbuild (as esbuild.mjs bundles the
 * extension) and runs it with plain `node`, so the figure has none of tsx's per-import getters and name helpers
 * (which make the same parse ~1.8x slower under `node --import tsx`).
 *
 * Usage: node probe.js OUTPUT_FILE ROOT MAX_ENTRIES N  → prints {"median":ms,"min":ms,"entries":n} on stdout.
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
process.stdout.write(`${JSON.stringify({ median: ms[Math.floor(ms.length / 2)], min: ms[0], checkpoints: entries })}\n`);
