/**
 * The demo's eval profiles, for `remoteRuns.evalProfiles` (the demo profile of `npm run demo`, "Try the demo host" in
 * the extension, and the headless demo's CLI config): a small script on the demo machine that reports an acceptance
 * length for a checkpoint, and a speculative-server profile measuring the demo host's drafter server (specServer.ts)
 * through the demo host's SSH link. Their own file, so the extension can name them without loading the demo host.
 */
import { DEMO_EVAL } from './scripts';

/** The demo command eval profile. */
export function demoEvalProfile(): Record<string, unknown> {
  return {
    name: 'Demo: acceptance length',
    where: 'target',
    command: `sh ${DEMO_EVAL} \${checkpoint} \${step}`,
  };
}

/**
 * The demo's speculative-server profile: the drafter server at the demo host's 127.0.0.1:30000 (specServer.ts
 * DEMO_SPEC_URL; written out here so this file loads nothing of the server), greedy, 128 tokens per prompt, the
 * built-in prompts.
 */
export function demoServerEvalProfile(): Record<string, unknown> {
  return {
    kind: 'speculative-server',
    name: 'demo drafter τ (SGLang)',
    server: 'http://127.0.0.1:30000',
    model: 'Qwen3-27B',
    temperature: 0,
    maxTokens: 128,
  };
}

/** Both demo profiles, as `remoteRuns.evalProfiles` lists them. */
export function demoEvalProfiles(): Record<string, unknown>[] {
  return [demoEvalProfile(), demoServerEvalProfile()];
}
