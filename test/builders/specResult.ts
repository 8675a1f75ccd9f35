/**
 * A speculative-server eval's result as the card and the CLI's `--card` read it: τ 3.2 from 100 verify steps of 3
 * draft tokens (220 accepted, 330 completion tokens, 12 requests), Qwen3-8B at temperature 0; `over` replaces fields.
 */
import type { SpecResult } from '../../src/core/eval/spec/types';

export function specResult(over: Partial<SpecResult> = {}): SpecResult {
  return {
    tool: 'speculative-server',
    label: 'target @ http://10.0.0.5:30000 T=0',
    speculative: true,
    tau: 3.2,
    tauDefinition: 'one-plus-accepted-per-draft',
    acceptanceRate: 0.55,
    pk: [0.8, 0.6, 0.4],
    outputTokensPerSec: 120,
    counts: { verifySteps: 100, completionTokens: 330, acceptedDraftTokens: 220, draftTokens: 300, requests: 12 },
    extra: {},
    settings: { temperature: 0, maxTokens: 256, concurrency: 1, model: 'Qwen3-8B', numSpeculativeTokens: 3, benchmark: 'built-in (12 short prompts)' },
    settingSources: { temperature: 'pinned', maxTokens: 'pinned', concurrency: 'pinned', model: 'pinned', numSpeculativeTokens: 'server', benchmark: 'pinned' },
    notes: ['stats from vLLM per-request metrics'],
    ...over,
  };
}
