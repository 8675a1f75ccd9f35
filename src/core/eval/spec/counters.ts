/**
 * Speculative-decoding stats from a server's Prometheus `/metrics` text: read the counters before and after a run,
 * take the difference, and compute τ, acceptance rate and p_k from it (definitions.ts). This is the fallback source
 * of an eval against a server: the counters count every request the server served, so the difference is the run's
 * own only when nobody else used the server meanwhile.
 *
 * Counters read (prometheus_client exposes a Counter named `x` as `x_total`):
 * - vLLM, vllm/v1/spec_decode/metrics.py `SpecDecodingProm`: `vllm:spec_decode_num_drafts` (verify steps, one per
 *   request per step), `vllm:spec_decode_num_draft_tokens` (proposed), `vllm:spec_decode_num_accepted_tokens`
 *   (accepted, bonus not counted), `vllm:spec_decode_num_accepted_tokens_per_pos{position="i"}` (steps whose
 *   position-i draft token was accepted; `SpecDecodingStats.observe_draft`). One series per engine: summed.
 * - SGLang, python/sglang/srt/metrics/collector.py `SchedulerMetricsCollector`: `sglang:spec_decode_num_drafts`
 *   ("draft attempts", += batch size per verify step) and `sglang:spec_decode_num_accepted_tokens_per_pos{position}`
 *   (`increment_spec_decode_counters`: per request, +1 at positions 0 … accepted−1). SGLang has no counter of proposed
 *   or accepted tokens: accepted is the sum over positions, and the acceptance rate is not known from counters
 *   (its `sglang:spec_accept_rate` / `sglang:spec_accept_length` are gauges of the last logging interval, not of a run).
 *   One series per scheduler rank (tp/dp): summed. SGLang's own tests scrape its metrics with the `sglang:` prefix
 *   (e.g. `sglang:spec_accept_length`); the collector of newer versions declares the names without it, so both
 *   spellings are read.
 */
import { RemoteRunsError } from '../../types';
import { acceptanceRate, pkFromPerPosition, tauFromAccepted } from './definitions';

/** One sample of the text exposition format: `name{labels} value`. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * Parse Prometheus text exposition (version 0.0.4): comments and blank lines are skipped; a sample line that does not
 * parse is returned in `bad` with its line number (never dropped silently).
 */
export function parsePrometheusText(text: string): { samples: PromSample[]; bad: { line: number; text: string }[] } {
  const samples: PromSample[] = [];
  const bad: { line: number; text: string }[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, '').trim();
    if (line === '' || line.startsWith('#')) continue;
    const s = parseSample(line);
    if (s) samples.push(s);
    else bad.push({ line: i + 1, text: line });
  }
  return { samples, bad };
}

function parseSample(line: string): PromSample | undefined {
  const m = /^([A-Za-z_:][A-Za-z0-9_:]*)/.exec(line);
  if (!m) return undefined;
  const name = m[1];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    for (;;) {
      while (line[i] === ' ' || line[i] === ',') i++;
      if (line[i] === '}') {
        i++;
        break;
      }
      const lm = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"/.exec(line.slice(i));
      if (!lm) return undefined;
      i += lm[0].length;
      let value = '';
      for (;;) {
        const c = line[i];
        if (c === undefined) return undefined;
        if (c === '\\') {
          const n = line[i + 1];
          value += n === 'n' ? '\n' : (n ?? '');
          i += 2;
          continue;
        }
        if (c === '"') {
          i++;
          break;
        }
        value += c;
        i++;
      }
      labels[lm[1]] = value;
    }
  }
  const rest = line.slice(i).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '') return undefined;
  const v = rest[0];
  const value = v === '+Inf' || v === 'Inf' ? Infinity : v === '-Inf' ? -Infinity : v === 'NaN' ? NaN : Number(v);
  if (Number.isNaN(value) && v !== 'NaN') return undefined;
  return { name, labels, value };
}

/** The speculative-decoding counters of one scrape, summed over engines / ranks. */
export interface SpecCounters {
  engine: 'vllm' | 'sglang';
  drafts: number;
  /** Proposed draft tokens (vLLM only). */
  draftTokens?: number;
  /** Accepted draft tokens, bonus not counted (vLLM's counter; SGLang: the sum over positions). */
  acceptedTokens?: number;
  /** Accepted counts by 0-based position. */
  acceptedPerPos?: number[];
}

function counterValue(samples: readonly PromSample[], name: string): number | undefined {
  let found = false;
  let sum = 0;
  for (const s of samples) {
    if (s.name === `${name}_total` || s.name === name) {
      found = true;
      sum += s.value;
    }
  }
  return found ? sum : undefined;
}

function perPosition(samples: readonly PromSample[], name: string): number[] | undefined {
  const byPos = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_total` && s.name !== name) continue;
    const p = s.labels.position;
    if (p === undefined || !/^\d+$/.test(p)) continue;
    byPos.set(Number(p), (byPos.get(Number(p)) ?? 0) + s.value);
  }
  if (byPos.size === 0) return undefined;
  const out: number[] = [];
  for (let i = 0; i <= Math.max(...byPos.keys()); i++) out.push(byPos.get(i) ?? 0);
  return out;
}

/**
 * The speculative counters of a `/metrics` text, or undefined when it has none: the server runs without speculative
 * decoding, or (vLLM) with `--disable-log-stats`, which turns its Prometheus stat loggers off.
 */
export function readSpecCounters(text: string): SpecCounters | undefined {
  const { samples } = parsePrometheusText(text);
  const vDrafts = counterValue(samples, 'vllm:spec_decode_num_drafts');
  if (vDrafts !== undefined) {
    return {
      engine: 'vllm',
      drafts: vDrafts,
      draftTokens: counterValue(samples, 'vllm:spec_decode_num_draft_tokens'),
      acceptedTokens: counterValue(samples, 'vllm:spec_decode_num_accepted_tokens'),
      acceptedPerPos: perPosition(samples, 'vllm:spec_decode_num_accepted_tokens_per_pos'),
    };
  }
  for (const prefix of ['sglang:', '']) {
    const sDrafts = counterValue(samples, `${prefix}spec_decode_num_drafts`);
    if (sDrafts === undefined) continue;
    const perPos = perPosition(samples, `${prefix}spec_decode_num_accepted_tokens_per_pos`);
    return { engine: 'sglang', drafts: sDrafts, acceptedPerPos: perPos, acceptedTokens: perPos?.reduce((a, b) => a + b, 0) };
  }
  return undefined;
}

/**
 * after − before, field by field. A counter that went down means the server restarted between the two reads (its
 * counters start at 0 again): that is an error, as the difference would count nothing of the run.
 */
export function diffCounters(before: SpecCounters, after: SpecCounters): SpecCounters {
  if (before.engine !== after.engine) throw new RemoteRunsError('protocol', `the server's metrics changed engine between the two reads (${before.engine}, then ${after.engine}); run the eval again`);
  const sub = (name: string, a: number | undefined, b: number | undefined): number | undefined => {
    if (a === undefined || b === undefined) return undefined;
    if (a < b) throw new RemoteRunsError('protocol', `the server's ${name} counter went down (${b} → ${a}) during the eval: the server restarted; run the eval again`, { counter: name });
    return a - b;
  };
  const perPos =
    after.acceptedPerPos && before.acceptedPerPos
      ? after.acceptedPerPos.map((v, i) => sub(`accepted-at-position-${i}`, v, before.acceptedPerPos?.[i] ?? 0) ?? 0)
      : undefined;
  return {
    engine: after.engine,
    drafts: sub('drafts', after.drafts, before.drafts) ?? 0,
    draftTokens: sub('draft tokens', after.draftTokens, before.draftTokens),
    acceptedTokens: sub('accepted tokens', after.acceptedTokens, before.acceptedTokens),
    acceptedPerPos: perPos,
  };
}

/** τ (`one-plus-accepted-per-draft`), acceptance rate and p_k of a counter difference (or of one scrape since start). */
export interface CounterRates {
  verifySteps: number;
  tau?: number;
  acceptanceRate?: number;
  pk?: number[];
}

export function ratesFromCounters(c: SpecCounters): CounterRates {
  const accepted = c.acceptedTokens ?? c.acceptedPerPos?.reduce((a, b) => a + b, 0);
  return {
    verifySteps: c.drafts,
    tau: accepted === undefined ? undefined : tauFromAccepted(accepted, c.drafts),
    acceptanceRate: accepted === undefined || c.draftTokens === undefined ? undefined : acceptanceRate(accepted, c.draftTokens),
    pk: c.acceptedPerPos ? pkFromPerPosition(c.acceptedPerPos, c.drafts) : undefined,
  };
}
