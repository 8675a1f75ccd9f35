/**
 * `remote-runs metrics ADDRESS [--json|--csv] [--follow]`: a run's curves, headless, through the same RunFeed the
 * metrics panels use (same parsers, same series names, same handling of resumed runs and half-written lines).
 *
 * - text: one line per series: name, point count, first and last (step, value);
 * - `--json`: `{"run":{…},"x","series":[{"name","points","first":{"step","value"},"last":{…},"segments"}],"status","skipped"}`;
 * - `--csv`: every point, `series,step,value,time` (time: ISO 8601 where the log has one; `step` is the run's x,
 *   which stderr names when it is not a step, e.g. Keras' epochs);
 * - `--follow`: after that, new points as they arrive (text: `series step value` lines, `--csv`: CSV rows,
 *   `--json`: one JSON object per point per line) until Ctrl-C. A series that starts over (the log was rewritten)
 *   is said on stderr and printed again from its start; a series that restarted from an earlier step (a resumed
 *   process, series.ts: the later process wins) is said on stderr (`resumed at step 33: 3 earlier points
 *   replaced`) and printed on from its restart.
 * Values are printed exactly as parsed (the shortest text that reads back as the same double).
 */
import type { RemoteRunsCore } from '../core/service';
import type { Executor } from '../core/remote';
import { RemoteRunsError, type TargetRef } from '../core/types';
import { RunFeed, describeRestarts, type Series } from '../core/metrics';
import type { parseAddress } from '../core/address';
import type { RunRefWire } from '../shared/metricsProtocol';
import { csvField } from '../core/util/textTable';
import { displayName } from '../shared/display';
import { writeInSteps } from './output';

export interface MetricsCliDeps {
  core: RemoteRunsCore;
  executor(host: string, target: TargetRef): Executor;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  signal: AbortSignal;
  /** Between polls while following. Default 2000 ms. */
  pollMs?: number;
}

export type MetricsFormatOption = 'text' | 'json' | 'csv';

export async function metricsCommand(
  deps: MetricsCliDeps,
  addr: ReturnType<typeof parseAddress>,
  options: { format: MetricsFormatOption; follow: boolean },
): Promise<number> {
  if (!addr.target || addr.run === undefined) {
    throw new RemoteRunsError('bad-address', 'metrics needs host/target/run (a run by its name, e.g. kpro6/pct:200/expA/seed1)');
  }
  const target: TargetRef = addr.target;
  const { run, note } = await deps.core.resolveRun(addr.host, target, addr.segments ?? [addr.run], 'none', deps.signal);
  if (note) deps.stderr.write(`remote-runs: ${note}\n`);
  if (run.metrics.length === 0) {
    throw new RemoteRunsError('not-found', `Run ${JSON.stringify(run.name)} at ${run.path} has no metrics log (it was recognised by its checkpoints)`);
  }
  const ref: RunRefWire = {
    hostName: addr.host,
    target: { kind: target.kind, id: target.id },
    runPath: run.path,
    runName: run.name,
    metrics: run.metrics,
    checkpoints: [],
  };
  const feed = new RunFeed(ref, { executor: () => deps.executor(addr.host, target), stream: (t) => deps.core.stream(addr.host, t), intervalMs: () => deps.pollMs ?? 2000 });
  const onAbort = (): void => feed.stop();
  deps.signal.addEventListener('abort', onAbort, { once: true });
  try {
    await feed.pollNow();
    if (deps.signal.aborted) throw new RemoteRunsError('cancelled', 'cancelled');
    const series = feed.series();
    const problem = feed.status !== 'following' ? feed.status : undefined;
    if (series.size === 0 && problem) throw new RemoteRunsError('command-failed', `Could not read the metrics of ${run.name}: ${problem}`);
    if (problem) deps.stderr.write(`remote-runs: some metrics logs could not be read: ${problem}\n`);
    // x is not always a step (Keras' CSVLogger logs epochs, a log without any gives line numbers): say which.
    const xAxis = feed.xAxis;
    if (xAxis !== undefined && xAxis !== 'step') deps.stderr.write(`remote-runs: x is ${xAxis}, not a step\n`);
    const skipped = feed.skipped;
    if (skipped) deps.stderr.write(`remote-runs: skipped in ${run.name}: ${skipped}\n`);
    for (const [name, s] of series) {
      const r = describeRestarts(s);
      if (r) deps.stderr.write(`remote-runs: ${displayName(name)}: ${r}\n`);
    }
    const printed = new Map<string, Printed>();
    if (options.format === 'json' && !options.follow) {
      deps.stdout.write(`${JSON.stringify({ run: { name: run.name, path: run.path, metrics: run.metrics }, x: xAxis ?? null, series: [...series].map(([name, s]) => summaryJson(name, s)), status: feed.status, ...(skipped ? { skipped } : {}) })}\n`);
    } else if (options.format === 'text') {
      await writeInSteps(deps.stdout, deps.signal, summaryTextPieces(series, xAxis === undefined || xAxis === 'step' ? 'step' : /^[\w/.-]+$/.test(xAxis) ? xAxis : 'x'), 'metrics');
      for (const [name, s] of series) printed.set(name, { length: s.length, restarts: s.restartCount });
    }
    if (options.format === 'csv') deps.stdout.write('series,step,value,time\n');
    if (options.format !== 'text' && (options.follow || options.format === 'csv')) printNew(series, printed, options.format, deps);
    if (!options.follow) return 0;

    while (!deps.signal.aborted) {
      await delay(deps.pollMs ?? 2000, deps.signal);
      if (deps.signal.aborted) break;
      const before = feed.status;
      const path = feed.runPath;
      await feed.pollNow();
      if (feed.status !== before) deps.stderr.write(`remote-runs: ${feed.status}\n`);
      // The followed folder became part of a run above it (a Trainer's logdir once its output_dir is the run).
      if (feed.runPath !== path) deps.stderr.write(`remote-runs: ${run.name}'s logs are now part of the run at ${feed.runPath}; following it\n`);
      printNew(feed.series(), printed, options.format, deps);
    }
    return 0;
  } finally {
    deps.signal.removeEventListener('abort', onAbort);
    feed.dispose();
  }
}

/** What was printed of a series: its length and its restart count then. */
interface Printed {
  length: number;
  restarts: number;
}

/**
 * Print every point not printed yet. A series that restarted since (its step went back: series.ts' later-wins rule)
 * is said on stderr and printed on from its first new restart; one that is shorter without a restart (its log was
 * rewritten) is printed again from its start.
 */
function printNew(series: Map<string, Series>, printed: Map<string, Printed>, format: MetricsFormatOption, deps: MetricsCliDeps): void {
  const out: string[] = [];
  for (const [name, s] of series) {
    const was = printed.get(name);
    let from = was?.length ?? 0;
    // A rebuilt series (a new log joined it) holds the same points up to where it restarted, in the same order.
    if (was && s.restartCount > was.restarts) {
      const fresh = s.restarts.slice(was.restarts);
      for (const r of fresh) deps.stderr.write(`remote-runs: ${displayName(name)}: resumed at step ${r.step}: ${r.replaced} earlier point${r.replaced === 1 ? '' : 's'} replaced\n`);
      from = Math.min(from, ...fresh.map((r) => r.index));
    }
    if (s.length < from) {
      deps.stderr.write(`remote-runs: ${displayName(name)} started over (its log was rewritten); printing it again from its start\n`);
      from = 0;
    }
    for (let i = from; i < s.length; i++) {
      const ms = s.timeAt(i);
      const time = !Number.isNaN(ms) ? new Date(ms).toISOString() : '';
      const x = s.xAt(i);
      const y = s.yShown(i);
      if (format === 'csv') out.push(`${csvField(name)},${csvField(String(x))},${csvField(String(y))},${time}`);
      else if (format === 'json') out.push(JSON.stringify({ series: name, step: x, value: y, ...(time ? { time } : {}) }));
      else out.push(`${displayName(name)}\t${x}\t${y}`);
    }
    printed.set(name, { length: s.length, restarts: s.restartCount });
  }
  if (out.length) deps.stdout.write(`${out.join('\n')}\n`);
}

function summaryJson(name: string, s: Series): unknown {
  const n = s.length;
  return {
    name,
    points: n,
    first: n ? { step: s.xAt(0), value: s.yShown(0) } : null,
    last: n ? { step: s.xAt(n - 1), value: s.yShown(n - 1) } : null,
    // More than one: the step went back (a resumed run); each segment is one stretch of rising steps.
    segments: s.segments.length,
    // Where the step went back and how many earlier points the later process replaced (series.ts).
    ...(s.restartCount > 0 ? { restarts: s.restarts.map((r) => ({ step: r.step, replaced: r.replaced })) } : {}),
  };
}

/**
 * The text summary in pieces of a line each: one pass for the column widths, one for the rows (linear in series; a
 * width recomputed per row was quadratic: 20,000 keys took minutes). Names are shown through displayName, so a key
 * holding a newline or a control cannot forge a row.
 */
export function* summaryTextPieces(series: Map<string, Series>, x: string): Generator<string> {
  if (series.size === 0) {
    yield 'no points yet\n';
    return;
  }
  const first = `first ${x}: value`;
  const w = ['series'.length, 'points'.length, first.length];
  const row = (name: string, s: Series): [string, string, string, string, string] => {
    const n = s.length;
    const resumed = s.segments.length > 1 ? `  (${s.segments.length} segments: resumed)` : '';
    return [displayName(name), String(n), n ? `${s.xAt(0)}: ${s.yShown(0)}` : '-', n ? `${s.xAt(n - 1)}: ${s.yShown(n - 1)}` : '-', resumed];
  };
  for (const [name, s] of series) {
    const r = row(name, s);
    for (let k = 0; k < 3; k++) if (r[k].length > w[k]) w[k] = r[k].length;
  }
  yield `${'series'.padEnd(w[0])}  ${'points'.padStart(w[1])}  ${first.padEnd(w[2])}  last ${x}: value\n`;
  for (const [name, s] of series) {
    const r = row(name, s);
    yield `${r[0].padEnd(w[0])}  ${r[1].padStart(w[1])}  ${r[2].padEnd(w[2])}  ${r[3]}${r[4]}\n`;
  }
}

function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done(): void {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
