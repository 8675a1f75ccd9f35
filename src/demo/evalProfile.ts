/**
 * The demo's eval profile, for `remoteRuns.evalProfiles` (the demo profile of `npm run demo`, and "Try the demo host"
 * in the extension): a small script on the demo machine that reports an acceptance length for a checkpoint. Its own
 * file, so the extension can name it without loading the demo host.
 */
import { DEMO_EVAL } from './scripts';

/** The demo eval profile, for `remoteRuns.evalProfiles`. */
export function demoEvalProfile(): Record<string, unknown> {
  return {
    name: 'Demo: acceptance length',
    where: 'target',
    command: `sh ${DEMO_EVAL} \${checkpoint} \${step}`,
  };
}
