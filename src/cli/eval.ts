import type { RemoteRunsCore } from '../core/service';
import { pickCheckpointWithNote } from '../core/service';
import type { parseAddress } from '../core/address';
import { RemoteRunsError, evalStep, formatTarget, isRemoteRunsError } from '../core/types';
import type { EvalService } from '../core/eval/service';
import type { EvalPlace, EvalProfile, EvalSubject } from '../core/eval/types';
import { localCheckpointState, requireLocalCheckpoint, usesLocalCheckpoint } from '../core/eval/localCheckpoint';
import { planDownload } from '../core/transfer';
import type { TransferSource } from '../core/transfer/types';
import type { SpecServerProfile } from '../core/eval/spec/server/profile';
import { evaluateCheckpointWithServer, type SpecServerMeasure } from '../core/eval/spec/server/checkpointEval';
import { TAU_DEFINITION_TEXT } from '../core/eval/spec/definitions';
import { StringDecoder } from 'node:string_decoder';
import { LogLineEnds } from '../shared/display';

export interface EvalCliDeps {
  core: RemoteRunsCore;
  evals: EvalService;
  /** Validated profiles from the config file's `evalProfiles`. */
  profiles: readonly EvalProfile[];
  /** Its `"kind": "speculative-server"` profiles, and how one runs through the link of a configured host. */
  serverProfiles?: readonly SpecServerProfile[];
  measureServer?: SpecServerMeasure;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
  /** Between log polls while following. Default 500 ms. */
  pollMs?: number;
  /** Where `remote-runs pull` wrote the host's downloads (`--to`, as for pull): for `${localCheckpoint}`. */
  downloads?: { root: string; source: (host: string, target: EvalSubject['target']) => TransferSource };
}

/** Where a place's folder is, for humans: `local:/path` or `host/target:/path`. */
export function describePlace(place: EvalPlace, dir: string): string {
  return place.kind === 'local' ? `local:${dir}` : `${place.host}/${formatTarget(place.target)}:${dir}`;
}

/**
 * `remote-runs eval PROFILE host/target/run/checkpoint|latest [--follow] [--to DIR]`.
 * A profile using `${localCheckpoint}` gets the checkpoint `remote-runs pull --to DIR` downloaded (default DIR: the
 * current folder, as for pull); before a complete download it fails with `not-found` and says to pull first.
 * Without follow: prints the eval id and its log's location on stdout and returns 0 (the eval runs on, detached).
 * With follow: streams the log to stdout from its start and returns the eval's exit status (lost: 2). Ctrl-C stops
 * following only; the eval keeps running, and the message says how to find it again.
 */
export async function evalCommand(deps: EvalCliDeps, profileName: string, addr: ReturnType<typeof parseAddress>, options: { follow: boolean; json?: boolean }): Promise<number> {
  if (!addr.target || addr.run === undefined || addr.checkpoint === undefined) {
    throw new RemoteRunsError('bad-address', 'eval needs host/target/run/checkpoint (a checkpoint name such as step_20000, a step, or "latest")');
  }
  const server = deps.serverProfiles?.find((p) => p.name === profileName);
  if (server) return serverEval(deps, server, addr, options);
  const profile = deps.profiles.find((p) => p.name === profileName);
  if (!profile) {
    const known = [...deps.profiles, ...(deps.serverProfiles ?? [])].map((p) => p.name);
    throw new RemoteRunsError(
      'bad-config',
      `No eval profile ${JSON.stringify(profileName)} in the config's "evalProfiles" (${known.length ? `known: ${known.join(', ')}` : 'none are configured'})`,
    );
  }
  const found = await deps.core.resolveRun(addr.host, addr.target, addr.segments ?? [addr.run, addr.checkpoint], 'required', deps.signal);
  const { run } = found;
  const { checkpoint, note } = pickCheckpointWithNote(run, found.checkpoint ?? addr.checkpoint, found.listedInPart);
  // `latest` passed over a save still being written, or an incomplete one was named: said before the eval starts.
  if (note) deps.stderr.write(`${note}\n`);
  const subject: EvalSubject = {
    host: addr.host,
    target: addr.target,
    run: { name: run.name, path: run.path },
    checkpoint: { path: checkpoint.path, step: evalStep(checkpoint) },
  };
  if (usesLocalCheckpoint(profile) && deps.downloads) {
    // The checkpoint as `pull --to DIR` left it: every file complete and verified, or a clear "pull it first".
    const plan = await planDownload(deps.downloads.source(addr.host, addr.target), checkpoint, { root: deps.downloads.root, run: run.name }, deps.signal);
    subject.localCheckpoint = requireLocalCheckpoint(localCheckpointState(plan), profile.name, checkpoint.name);
  }
  const started = await deps.evals.start(profile, subject, deps.signal);
  const log = describePlace(started.place, `${started.dir}/log`);
  if (!options.follow) {
    deps.stdout.write(`${started.id}\n${log}\n`);
    return 0;
  }
  const what = `${addr.host}/${formatTarget(addr.target)}/${run.name}/${checkpoint.name}`;
  deps.stderr.write(`eval ${started.id} of ${what} with ${profile.name}${started.jobId ? ` (Slurm job ${started.jobId})` : ''}; log ${log}\n`);
  // The log as text with its progress bars' bare CRs as line ends (LogLineEnds); the writer escapes the rest.
  const decoder = new StringDecoder('utf8');
  const lineEnds = new LogLineEnds();
  try {
    const end = await deps.evals.follow(started.place, started.id, started.meta, {
      pollMs: deps.pollMs ?? 500,
      signal: deps.signal,
      onData: (chunk) => deps.stdout.write(lineEnds.push(decoder.write(chunk))),
      onRetry: (e) => deps.stderr.write(`eval ${started.id}: ${e.kind}: ${e.message}; retrying\n`),
    });
    deps.stdout.write(lineEnds.push(decoder.end()) + lineEnds.end());
    const results = end.results.map((r) => Object.entries(r).map(([k, v]) => `${k}=${v}`).join(' ')).join('; ');
    deps.stderr.write(`eval ${started.id}: ${end.state}${end.exitCode !== undefined ? ` (exit ${end.exitCode})` : ''}${results ? `: ${results}` : ''}\n`);
    if (end.state === 'passed') return 0;
    if (end.state === 'lost') return 2;
    return end.exitCode !== undefined && end.exitCode > 0 && end.exitCode < 256 ? end.exitCode : 1;
  } catch (e) {
    if (isRemoteRunsError(e) && e.kind === 'cancelled') {
      deps.stderr.write(`stopped following; eval ${started.id} keeps running (log ${log})\n`);
      return 130;
    }
    throw e;
  }
}

/**
 * A `speculative-server` profile (core/eval/spec/server): the running SGLang or vLLM server the profile names is
 * measured through the SSH link of its `host` (default the checkpoint's host), here and now, for the checkpoint the
 * address names (the drafter the server serves: the server cannot say which checkpoint it loaded, so the address is
 * the user's word for it). stdout: the result line (`{"tau": …, "acceptance_rate": …, "p_1": …}`, as a command eval
 * prints one), or with --json the whole result with its τ definition, settings, notes and the eval's id; stderr: what
 * was measured, and the id of the eval it is recorded as (EvalService.recordMeasured: an ended eval of the checkpoint
 * in the run's folder, its whole result in spec.json).
 */
async function serverEval(deps: EvalCliDeps, profile: SpecServerProfile, addr: ReturnType<typeof parseAddress>, options: { json?: boolean }): Promise<number> {
  if (!deps.measureServer) throw new RemoteRunsError('internal', 'speculative-server evals are not wired in this command');
  const found = await deps.core.resolveRun(addr.host, addr.target!, addr.segments ?? [addr.run!, addr.checkpoint!], 'required', deps.signal);
  const { checkpoint, note } = pickCheckpointWithNote(found.run, found.checkpoint ?? addr.checkpoint!, found.listedInPart);
  if (note) deps.stderr.write(`${note}\n`);
  // The path the editor takes too (core/eval/spec/server/checkpointEval.ts): measured, said, then recorded.
  const done = await evaluateCheckpointWithServer(
    { evals: deps.evals, measure: deps.measureServer, isCluster: (name) => deps.core.cluster(name) !== undefined },
    profile,
    { host: addr.host, target: addr.target!, run: found.run, checkpoint },
    {
      signal: deps.signal,
      onStart: (line) => deps.stderr.write(`${line}\n`),
      // Said before recording, so a recording that fails (a run folder not writable) loses no measurement.
      onSummary: (lines) => lines.forEach((line) => deps.stderr.write(`${line}\n`)),
    },
  );
  const { outcome: out, recorded, what } = done;
  const r = out.result;
  if (options.json) {
    deps.stdout.write(`${JSON.stringify({ id: recorded.id, address: what, step: evalStep(checkpoint), profile: profile.name, engine: out.engine, model: out.model, source: out.source, tauDefinition: TAU_DEFINITION_TEXT[r.tauDefinition], result: out.evalResult, settings: r.settings, settingSources: r.settingSources, counts: r.counts, notes: r.notes })}\n`);
  } else {
    deps.stdout.write(`${JSON.stringify(out.evalResult)}\n`);
  }
  deps.stderr.write(`eval ${recorded.id} recorded in ${describePlace(recorded.place, recorded.dir)}\n`);
  return 0;
}
