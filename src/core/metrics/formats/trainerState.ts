/**
 * Hugging Face `trainer_state.json`. The Trainer rewrites this file whole at every save, so it is parsed whole
 * at `end()`, never line by line. Each `log_history` entry is one row: x is its `step`, every other numeric
 * field (`loss`, `eval_loss`, `learning_rate`, `epoch`, `grad_norm`, …) a metric.
 *
 * On a successful parse the RunMetrics is replaced (reset, then filled), so re-reading an updated file never
 * duplicates points. A file that does not parse (caught mid-rewrite) leaves the previous data in place and is
 * reported as one bad entry.
 */
import type { MetricsParser } from './parser';
import type { RunMetrics } from '../series/series';
import { excerpt, judgeValue, stepProblem } from './fields';
import { parseJsonLine } from './jsonl';

/** trainer_state.json files of long runs reach a few MB; anything far beyond is not one. */
const MAX_BYTES = 256 * 1024 * 1024;

export class TrainerStateParser implements MetricsParser {
  readonly format = 'trainer-state' as const;
  private parts: Uint8Array[] = [];
  private length = 0;

  constructor(readonly metrics: RunMetrics) {}

  get pendingBytes(): number {
    return this.length;
  }

  push(chunk: Uint8Array): void {
    if (this.length + chunk.length > MAX_BYTES) return;
    this.parts.push(chunk.slice());
    this.length += chunk.length;
  }

  end(): void {
    const bytes = new Uint8Array(this.length);
    let at = 0;
    for (const p of this.parts) {
      bytes.set(p, at);
      at += p.length;
    }
    this.parts = [];
    this.length = 0;
    const text = new TextDecoder('utf-8').decode(bytes);
    parseTrainerState(text, this.metrics);
  }
}

/** Parse a whole trainer_state.json text into `metrics` (see the file comment for the replace semantics). */
export function parseTrainerState(text: string, metrics: RunMetrics): void {
  // Python's json.dump writes bare NaN for a diverged loss; parseJsonLine reads it as a skippable value.
  const root = text.trim() === '' ? undefined : parseJsonLine(text);
  if (root === undefined) {
    metrics.noteBadLine({ line: 1, byteOffset: 0, excerpt: excerpt(text), reason: 'not JSON (the file may be mid-rewrite)' });
    return;
  }
  const history = root !== null && typeof root === 'object' ? (root as { log_history?: unknown }).log_history : undefined;
  if (!Array.isArray(history)) {
    metrics.noteBadLine({ line: 1, byteOffset: 0, excerpt: excerpt(text), reason: 'no log_history array' });
    return;
  }
  metrics.reset();
  let lastX: number | undefined;
  history.forEach((entry: unknown, i) => {
    const n = i + 1;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      metrics.noteBadLine({ line: n, excerpt: excerpt(JSON.stringify(entry) ?? String(entry)), reason: 'entry is not an object' });
      return;
    }
    const e = entry as Record<string, unknown>;
    const step = e.step;
    const bad = stepProblem(step);
    if (bad !== undefined) {
      metrics.noteBadLine({ line: n, excerpt: excerpt(JSON.stringify(e)), reason: `step ${bad}` });
      return;
    }
    metrics.records++;
    const hasStep = typeof step === 'number' && Number.isFinite(step);
    if (hasStep) metrics.noteX('step');
    else metrics.xMissing++;
    const x = hasStep ? (lastX = step) : (lastX ?? n);
    for (const [key, v] of Object.entries(e)) {
      if (key === 'step') continue;
      const verdict = judgeValue(metrics, key, v);
      if (verdict.kind === 'number') metrics.add(key, x, verdict.value);
      else if (verdict.kind === 'bad') {
        metrics.noteBadValue({ line: n, excerpt: excerpt(JSON.stringify(e)), reason: verdict.reason, key });
      }
    }
  });
}
