/**
 * A speculative-server eval of one checkpoint, measured and recorded: the one path the CLI (`remote-runs eval PROFILE
 * ADDRESS`, cli/eval.ts) and the editor (Evaluate Checkpoint, extension/eval/register.ts) both take.
 *
 * The server the profile names is measured through the SSH link of its `host` (default: the checkpoint's host) here
 * and now (run.ts), for the checkpoint the caller names: the drafter the server serves. The server cannot say which
 * checkpoint it loaded (SGLang's `/get_server_info` gives a path, `speculative_draft_model_path`, recorded with the
 * settings as `draftModel`), so the checkpoint named is the user's word for it. The result is recorded as an ended
 * eval of that checkpoint in the run's folder (EvalService.recordMeasured: its whole result in spec.json), so the
 * tree, the eval table, the metrics panel (τ at the checkpoint's step) and the card show it as they show command evals.
 */
import type { ConnectionPool, PoolHost } from '../../../ssh/pool';
import { RemoteRunsError, evalStep, formatTarget, type Checkpoint, type Run, type TargetRef } from '../../../types';
import type { EvalService, StartedEval } from '../../service';
import type { EvalSubject } from '../../types';
import { TAU_DEFINITION_TEXT } from '../definitions';
import { formatSpecRecord } from '../record';
import { SPEC_SERVER_KIND, type SpecServerProfile } from './profile';
import { runSpecServerEval, type SpecServerOutcome } from './run';

/** Measures a profile's server through the link of the host named (runSpecServerEval with the pool's lease). */
export type SpecServerMeasure = (profile: SpecServerProfile, hostName: string, o: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void }) => Promise<SpecServerOutcome>;

/** The measure of both faces: the host's configured entry, through the one pool. */
export function poolMeasure(pool: ConnectionPool, resolveHost: (name: string) => PoolHost): SpecServerMeasure {
  return (profile, hostName, o) => runSpecServerEval({ pool, host: resolveHost(hostName), profile, signal: o.signal, onProgress: o.onProgress });
}

export interface SpecCheckpointRef {
  host: string;
  target: TargetRef;
  run: Pick<Run, 'name' | 'path'>;
  checkpoint: Checkpoint;
}

export interface SpecCheckpointEvalDeps {
  evals: Pick<EvalService, 'recordMeasured'>;
  measure: SpecServerMeasure;
  /** True when the name is a Kubernetes cluster of the configuration (RemoteRunsCore.cluster). */
  isCluster(name: string): boolean;
}

export interface SpecCheckpointEval {
  /** `host/target/run/checkpoint`, for messages. */
  what: string;
  /** The host whose link reached the server. */
  hostName: string;
  outcome: SpecServerOutcome;
  /** What was measured, a line and then the result's notes (said before recording: a failed recording loses none). */
  summary: string[];
  recorded: StartedEval;
  /** The server reports a draft model that does not name the checkpoint (otherDrafterNote; also among the notes). */
  otherDrafter?: string;
}

/**
 * The host whose SSH link reaches the profile's server: its `host`, else the checkpoint's. A Kubernetes cluster has
 * no SSH link to open a forwarded channel through: refused with what to set.
 */
export function specServerLinkHost(profile: SpecServerProfile, checkpointHost: string, isCluster: (name: string) => boolean): string {
  const hostName = profile.host ?? checkpointHost;
  if (isCluster(hostName)) {
    throw new RemoteRunsError('bad-config', `${profile.name}: ${hostName} is a Kubernetes cluster, and a speculative-server eval reaches its server through an SSH host's link: name one in the profile's "host"`, { field: 'host' });
  }
  return hostName;
}

/**
 * A note when the draft model the server reports (SGLang's `speculative_draft_model_path`, vLLM's speculative config
 * on `/server_info`) does not name the checkpoint evaluated: the result is then that drafter's, recorded at the
 * checkpoint named. Undefined when it names it (the same path, or a path ending in the checkpoint's name, or holding
 * it as a folder) or the server says nothing. A path the server sees under another mount may not name it and still
 * be it: hence a note, not an error.
 */
export function otherDrafterNote(draftModel: string | undefined, checkpoint: Pick<Checkpoint, 'name' | 'path'>): string | undefined {
  if (!draftModel) return undefined;
  const d = draftModel.replace(/\/+$/, '');
  if (d === checkpoint.path || d === checkpoint.name || d.endsWith(`/${checkpoint.name}`) || d.includes(`/${checkpoint.name}/`)) return undefined;
  return `the server reports its draft model as ${draftModel}, which does not name ${checkpoint.name}: if it serves another checkpoint, this result is that checkpoint's (restart the server with the draft model path set to ${checkpoint.path} as the server sees it, or evaluate the checkpoint it serves)`;
}

/** One line of what a measurement gave: τ with its definition, acceptance, p_k, output tokens/s, speedup. */
export function specSummaryLine(profileName: string, what: string, out: SpecServerOutcome): string {
  const r = out.result;
  const num = (v: number | undefined, digits = 3): string => (v === undefined ? '?' : String(Number(v.toFixed(digits))));
  const parts = [
    `τ ${num(r.tau)} (${TAU_DEFINITION_TEXT[r.tauDefinition]})`,
    `acceptance ${num(r.acceptanceRate)}`,
    ...(r.pk && r.pk.length > 0 ? [`p_1…p_${r.pk.length} ${r.pk.map((p) => num(p)).join(' ')}`] : []),
    `${num(r.outputTokensPerSec, 1)} output tokens/s`,
    ...(r.speedup !== undefined ? [`speedup ${num(r.speedup, 2)}x`] : []),
  ];
  return `eval ${profileName} of ${what} (${out.engine}, ${out.model}): ${parts.join(' · ')}`;
}

/**
 * Measure the checkpoint with the profile's server and record it. `onStart` hears what is about to be measured (the
 * CLI prints it), `onSummary` the result before it is recorded. Throws RemoteRunsError saying what to do: the server
 * unreachable through the link, no speculative stats (naming the flag), a model mismatch, a prompt set that does not
 * parse (run.ts, profile.ts), a cluster as the link's host (specServerLinkHost), `cancelled` on `signal`.
 */
export async function evaluateCheckpointWithServer(
  deps: SpecCheckpointEvalDeps,
  profile: SpecServerProfile,
  ref: SpecCheckpointRef,
  o: { signal?: AbortSignal; onProgress?: (done: number, total: number) => void; onStart?: (line: string) => void; onSummary?: (lines: readonly string[]) => void } = {},
): Promise<SpecCheckpointEval> {
  const hostName = specServerLinkHost(profile, ref.host, deps.isCluster);
  // Recorded by step: a checkpoint without one is refused before the server is asked anything.
  const step = evalStep(ref.checkpoint);
  const what = `${ref.host}/${formatTarget(ref.target)}/${ref.run.name}/${ref.checkpoint.name}`;
  o.onStart?.(`eval ${profile.name} of ${what}: ${profile.server} through ${hostName}'s link`);
  const outcome = await deps.measure(profile, hostName, { signal: o.signal, onProgress: o.onProgress });
  const other = otherDrafterNote(outcome.result.settings.draftModel, ref.checkpoint);
  if (other) outcome.result.notes.push(other);
  const summary = [specSummaryLine(profile.name, what, outcome), ...outcome.result.notes.map((n) => `  ${n}`)];
  o.onSummary?.(summary);
  const subject: EvalSubject = { host: ref.host, target: ref.target, run: { name: ref.run.name, path: ref.run.path }, checkpoint: { path: ref.checkpoint.path, step } };
  const recorded = await deps.evals.recordMeasured(
    subject,
    {
      profile: profile.name,
      kind: 'speculative-server',
      command: `${SPEC_SERVER_KIND} ${profile.server} (${outcome.engine}, ${outcome.model}) through ${hostName}'s link`,
      log: [...summary, JSON.stringify(outcome.evalResult)].join('\n'),
      results: [outcome.evalResult],
      spec: formatSpecRecord({ version: 1, engine: outcome.engine, model: outcome.model, server: profile.server, source: outcome.source, result: outcome.result }),
    },
    o.signal,
  );
  return { what, hostName, outcome, summary, recorded, ...(other ? { otherDrafter: other } : {}) };
}
