/**
 * A real speculative-decoding engine, replayed: test/fixtures/spec/engine/recorded-{sglang,vllm}.json hold what
 * serve.py (Hugging Face transformers' assisted generation behind SGLang's, or vLLM's, HTTP shape) answered to exactly the requests the
 * speculative-server eval sends, and the engine's own counts of each request (target forwards, accepted draft tokens,
 * the histogram). This server on 127.0.0.1 answers those requests with the recorded bodies, so the end-to-end test
 * (test/integration/specEngine.test.ts) needs no Python.
 *
 * Only the recorded requests are answered: a request is matched to the first not yet answered exchange of the same
 * method, path and JSON body (key order aside), each exchange answered once. Any other request gets a 400 whose
 * message names the difference to the nearest recorded one (`sampling_params.max_new_tokens: recorded 24, received
 * 40`), so a change in what the eval sends fails loudly instead of being answered with numbers of another request;
 * `unexpected` keeps those messages for the test to show.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { SpecPrompt } from '../../src/core/eval/spec/server/profile';

/** The engine's HTTP shapes recorded: SGLang's (/generate meta_info, sglext) and vLLM's (metrics.speculative_decoding). */
export type EngineShape = 'sglang' | 'vllm';

export function recordingFile(shape: EngineShape): string {
  return path.join(__dirname, '..', 'fixtures', 'spec', 'engine', `recorded-${shape}.json`);
}

export interface RecordedExchange {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  status: number;
  /** The server's body, exactly as it sent it. */
  response: string;
}

/** serve.py's own counts of one request (its `/engine_counts` entry). */
export interface EngineCount {
  prompt_tokens: number;
  completion_tokens: number;
  /** Forwards of the target model (a forward hook), one per loop pass of assisted decoding. */
  target_forwards: number;
  verify_steps: number;
  /** Σ num_matches that assisted decoding kept (the bonus token not counted). */
  accepted_draft_tokens: number;
  /** Σ candidate lengths the drafter actually proposed (K, fewer near max_tokens). */
  drafter_proposed_tokens: number;
  steps: { proposed: number; accepted: number }[];
  /** h[j]: verify steps that accepted exactly j draft tokens, j = 0 … K. */
  histogram: number[];
  /** The target alone (greedy, no drafter) gave exactly the same tokens. */
  greedy_equal: boolean;
  /** Target forwards the same request took without the drafter (one per token). */
  plain_target_forwards: number;
}

export interface EngineRecording {
  manifest: { python: string; torch: string; transformers: string; shape: EngineShape; seed: number; k: number; temperature: number; maxTokens: number };
  prompts: SpecPrompt[];
  exchanges: RecordedExchange[];
  engineCounts: EngineCount[];
}

export function loadRecording(shape: EngineShape): EngineRecording {
  return JSON.parse(fs.readFileSync(recordingFile(shape), 'utf8')) as EngineRecording;
}

export interface RecordedEngine {
  readonly url: string;
  readonly port: number;
  /** Indices of the exchanges answered, in the order they were asked. */
  readonly answered: number[];
  /** The 400 messages sent for requests that were not recorded. */
  readonly unexpected: string[];
  /** The exchanges not asked for (yet). */
  unanswered(): RecordedExchange[];
  stop(): Promise<void>;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The differences between a recorded JSON value and a received one, as `key.path: recorded X, received Y` (at most `max`). */
export function jsonDifferences(recorded: unknown, received: unknown, max = 5, at = ''): string[] {
  const out: string[] = [];
  const walk = (a: unknown, b: unknown, where: string): void => {
    if (out.length >= max) return;
    if (isPlainObject(a) && isPlainObject(b)) {
      for (const k of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
        const w = where ? `${where}.${k}` : k;
        if (!(k in b)) out.push(`${w}: recorded ${JSON.stringify(a[k])}, received nothing`);
        else if (!(k in a)) out.push(`${w}: not recorded, received ${JSON.stringify(b[k])}`);
        else walk(a[k], b[k], w);
        if (out.length >= max) return;
      }
      return;
    }
    if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
      a.forEach((x, i) => walk(x, b[i], `${where}[${i}]`));
      return;
    }
    if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${where || '(the body)'}: recorded ${JSON.stringify(a)}, received ${JSON.stringify(b)}`);
  };
  walk(recorded, received, at);
  return out;
}

/** Serve `recording` on 127.0.0.1 (an ephemeral port). */
export async function startRecordedEngine(recording: EngineRecording): Promise<RecordedEngine> {
  const answered: number[] = [];
  const unexpected: string[] = [];
  const used = new Set<number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const method = req.method ?? 'GET';
      const where = (req.url ?? '/').split('?')[0];
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      if (text !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
      }
      const same = recording.exchanges.map((e, i) => ({ e, i })).filter(({ e, i }) => !used.has(i) && e.method === method && e.path === where);
      const hit = same.find(({ e }) => jsonDifferences(e.body, body, 1).length === 0);
      if (hit) {
        used.add(hit.i);
        answered.push(hit.i);
        res.writeHead(hit.e.status, { 'Content-Type': 'application/json', Connection: 'close' });
        res.end(hit.e.response);
        return;
      }
      // The difference first: a client that shows only the start of an error body (the eval shows 200 characters) still shows it.
      const why =
        same.length === 0
          ? `no ${method} ${where} left in the recording (recorded, not yet answered: ${recording.exchanges.filter((_, i) => !used.has(i)).map((e) => `${e.method} ${e.path}`).join(', ') || 'nothing'})`
          : `${jsonDifferences(same[0].e.body, body).join('; ')} (against the first recorded ${method} ${where} not yet answered; none matches)`;
      const message = `not recorded: ${method} ${where}: ${why}. If the eval's requests changed on purpose, record again (test/fixtures/spec/engine/record.ts)`;
      unexpected.push(message);
      res.writeHead(400, { 'Content-Type': 'application/json', Connection: 'close' });
      res.end(JSON.stringify({ object: 'error', message, type: 'BadRequestError', code: 400 }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    answered,
    unexpected,
    unanswered: () => recording.exchanges.filter((_, i) => !used.has(i)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
