/**
 * The parse worker's thread (an esbuild entry point of its own, dist/metricsWorker.js): turns each read of a long
 * JSONL backlog into a FlatBatch (flatBatch.ts) while the owning thread receives the next read, and hands the
 * batch's arrays back by transfer, not copy. Started and stopped by ParseOffload (parseOffload.ts) only.
 */
import { parentPort } from 'node:worker_threads';
import { FlatBatcher, newBatchSpares } from './flatBatch';
import type { FromParseWorker, ToParseWorker } from './parseOffload';

const port = parentPort;
if (!port) throw new Error('parseWorker.ts runs as a worker thread (ParseOffload starts it)');
let batcher: FlatBatcher | undefined;
/** Batch storage given back, kept from one backlog to the next (a warm thread reads many). */
const spares = newBatchSpares();

port.on('message', (m: ToParseWorker) => {
  let reply: FromParseWorker;
  try {
    switch (m.type) {
      case 'start':
        batcher = new FlatBatcher(m.state, spares);
        return;
      case 'chunk': {
        if (!batcher) throw new Error('a chunk before start');
        const batch = batcher.push(new Uint8Array(m.buffer, m.offset, m.length));
        // The parser copies what it keeps of a chunk (a line cut at its end), so its buffer goes back for reuse.
        reply = { type: 'batch', seq: m.seq, batch, ...(m.back ? { buffer: m.buffer } : {}) };
        port.postMessage(reply, [batch.meta.buffer as ArrayBuffer, batch.values.buffer as ArrayBuffer, batch.raw.buffer as ArrayBuffer, ...(m.back ? [m.buffer] : [])]);
        return;
      }
      case 'spare':
        batcher?.recycle(m);
        return;
      default: {
        const never: never = m;
        throw new Error(`unknown message ${JSON.stringify(never)}`);
      }
    }
  } catch (e) {
    reply = { type: 'failed', message: e instanceof Error ? e.message : String(e) };
    port.postMessage(reply);
  }
});
