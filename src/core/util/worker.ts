/**
 * Starting one of the bundle's worker threads (esbuild.mjs builds each as an entry point of its own): the script
 * beside the running bundle (dist/, for the extension and the CLI), or from source (tests, tsx) the TypeScript
 * entry through tsx's require hook, since a worker does not inherit the parent's loaders; or a script an
 * environment variable names (a benchmark's fresh bundle, a test's failing worker).
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface WorkerScript {
  /** The bundled script's path (`path.join(__dirname, 'x.js')` in the caller: beside the bundle once bundled). */
  bundled: string;
  /** The TypeScript entry's path (`path.join(__dirname, 'x.ts')` in the caller, when run from source). */
  source: string;
  /** A script to run instead (from an environment variable), when set. */
  override?: string;
}

export function spawnWorker(script: WorkerScript, workerData?: unknown): Worker {
  if (script.override) return new Worker(script.override, { workerData });
  if (fs.existsSync(script.bundled)) return new Worker(script.bundled, { workerData });
  // Through createRequire so the bundler leaves this development-only lookup alone.
  const tsx = createRequire(__filename).resolve('tsx/cjs/api');
  return new Worker(`require(${JSON.stringify(tsx)}).register(); require(${JSON.stringify(script.source)});`, { eval: true, workerData });
}
