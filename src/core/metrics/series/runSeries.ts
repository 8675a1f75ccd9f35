/**
 * The series of one run, as TensorBoard and the writers mean them, from the metrics logs of the run.
 *
 * TensorBoard event files:
 * - The event files of one folder are one stream: a writer opens a new file at every start (a resumed or
 *   restarted run), named `events.out.tfevents.<secs>.<host>.<pid>.<n>` (torch/utils/tensorboard/
 *   event_file_writer.py and tensorboardX/event_file_writer.py, `EventFileWriter.__init__`; TF2 adds `.v2`),
 *   so the files are merged in the order of those creation times (then by name). A tag's points are one series
 *   in that order: a resume continues the curve, and a restart from an earlier step is resolved as TensorBoard
 *   does, the later process winning where steps repeat (series.ts), with the restart as a segment boundary.
 * - The event folders of one stream are one series too: a Trainer resumed into the same output_dir writes a new
 *   `runs/<time>_<host>/` folder, and both are the run's `train/loss` (discovery/logdirNames.ts eventStreamOf).
 * - Names come from an event folder's path below a FIXED home of the run: the run folder, its `logs/`, its
 *   `runs/<default logdir>/` (eventStreamOf), never from which logs exist at the moment, so a name never
 *   changes because a log appeared (Keras' `logs/validation/` after the first validation pass, a resumed
 *   Trainer's second folder). Folders below the home are TensorBoard's "runs" of it, named as TensorBoard labels them:
 *   - `add_scalars(main_tag, {tag: v})` writes one folder per dict key whose scalars are tagged `main_tag`:
 *     torch.utils.tensorboard `<logdir>/<main_tag with / → _>_<tag>/` (torch/utils/tensorboard/writer.py,
 *     `add_scalars`), tensorboardX `<logdir>/<main_tag>/<tag>/` (tensorboardX/writer.py, `add_scalars`, as
 *     of 2.6: seen in its real output). Either way the series is `loss_cmp/train` for main_tag `loss_cmp` and
 *     key `train`: the names the caller wrote, one prefix for the curves meant to be compared;
 *   - any other folder (Keras' `logs/train`, `logs/validation`; `add_hparams`' `<logdir>/<time>/`) is its
 *     path below the home, then the tag: `train/epoch_loss`, `validation/epoch_loss`, `1733050000.1/hparam/acc`,
 *     which is what TensorBoard shows as run and tag, and keeps train and validation apart under one prefix.
 * Other logs (JSONL, CSV, trainer_state.json, MLflow metric files) keep their keys. A key that two different
 * logs of the run both have keeps its name in the first and is `<file>:<key>` in the others.
 */
import type { MetricsFollower } from '../follow/follow';
import { Series } from './series';
import { eventStreamOf } from '../../discovery/logdirNames';

/** The creation time an event file's name carries (seconds; NaN when the name has none). */
export function eventFileTime(name: string): number {
  const m = /^events\.out\.tfevents\.(\d+(?:\.\d+)?)/.exec(name);
  return m ? Number(m[1]) : NaN;
}

/** Event file paths in the order they were written: by the time in their names, then by name. */
export function compareEventFiles(a: string, b: string): number {
  const ta = eventFileTime(baseName(a));
  const tb = eventFileTime(baseName(b));
  if (ta !== tb && !(Number.isNaN(ta) && Number.isNaN(tb))) {
    if (Number.isNaN(ta)) return 1;
    if (Number.isNaN(tb)) return -1;
    return ta - tb;
  }
  return naturalCompare(a, b);
}

/** Digit runs compare as numbers (`host.1.10` after `host.1.9`: the writer's counter), the rest as text. */
function naturalCompare(a: string, b: string): number {
  const re = /(\d+)|(\D+)/g;
  const pa = a.match(re) ?? [];
  const pb = b.match(re) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i];
    const y = pb[i];
    if (x === y) continue;
    const dx = /^\d/.test(x);
    const dy = /^\d/.test(y);
    if (dx && dy && x.length <= 15 && y.length <= 15 && Number(x) !== Number(y)) return Number(x) - Number(y);
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}

/**
 * The name of tag `tag` written in the event stream `rel` of a run (its path below the run's fixed home,
 * eventStreamOf; '' for the home itself): the tag itself in the home; `main/sub` for an `add_scalars` folder;
 * else `<rel>/<tag>`.
 */
export function eventSeriesName(rel: string, tag: string): string {
  if (rel === '') return tag;
  // tensorboardX: os.path.join(logdir, main_tag, tag), so the folder below the home already reads `main/sub`.
  if (rel.startsWith(`${tag}/`) && rel.length > tag.length + 1) return rel;
  // torch.utils.tensorboard: logdir + "/" + main_tag.replace("/", "_") + "_" + tag.
  const prefix = `${tag.replace(/\//g, '_')}_`;
  if (!rel.includes('/') && rel.startsWith(prefix) && rel.length > prefix.length) return `${tag}/${rel.slice(prefix.length)}`;
  return `${rel}/${tag}`;
}

interface Part {
  source: MetricsFollower;
  series: Series | undefined;
  generation: number;
  consumed: number;
  /** The source series' restartCount when read: a restart inside it changed points already taken. */
  restarts: number;
}

/**
 * One series that is the concatenation of a key's series in several files, in file order. Kept up to date
 * by appending while only the last files that have points grow (what a live writer does); rebuilt when an
 * earlier file changes (it was replaced, truncated, or a new file sorts before one already read).
 */
class ConcatSeries {
  private out: Series;
  private parts: Part[];

  constructor(
    readonly name: string,
    private readonly key: string,
    sources: readonly MetricsFollower[],
  ) {
    this.out = new Series(name);
    this.parts = sources.map((source) => ({ source, series: undefined, generation: -1, consumed: 0, restarts: 0 }));
  }

  current(): Series {
    const first = this.parts.findIndex((p) => {
      const s = p.source.metrics.get(this.key);
      return s !== p.series || p.source.metrics.generation !== p.generation || (s?.length ?? 0) !== p.consumed || (s?.restartCount ?? 0) !== p.restarts;
    });
    if (first < 0) return this.out;
    const p = this.parts[first];
    const s = p.source.metrics.get(this.key);
    const appendable =
      s === p.series &&
      p.source.metrics.generation === p.generation &&
      (s?.restartCount ?? 0) === p.restarts &&
      (s?.length ?? 0) > p.consumed &&
      this.parts.slice(first + 1).every((q) => q.consumed === 0 && q.series === undefined);
    if (!appendable) {
      this.out = new Series(this.name);
      for (const q of this.parts) {
        q.series = undefined;
        q.generation = -1;
        q.consumed = 0;
        q.restarts = 0;
      }
    }
    for (const q of appendable ? this.parts.slice(first) : this.parts) {
      const series = q.source.metrics.get(this.key);
      q.series = series;
      q.generation = q.source.metrics.generation;
      if (!series) continue;
      q.restarts = series.restartCount;
      for (let i = q.consumed; i < series.length; i++) this.out.push(series.xAt(i), series.yAt(i), series.timeAt(i));
      q.consumed = series.length;
    }
    return this.out;
  }
}

/**
 * The run's series by name from its followers (see the file comment), cached: call `series()` as often as
 * wanted; the work is done when a follower's data moved.
 */
export class RunSeries {
  private readonly merged = new Map<string, ConcatSeries>();
  private cache: Map<string, Series> | undefined;
  private cacheRevision = -1;

  /** `runPath`: the run's folder, the fixed home its event folders are named from (eventStreamOf). */
  constructor(
    private readonly followers: readonly MetricsFollower[],
    private readonly runPath: string,
  ) {}

  /** Event followers grouped by stream (eventStreamOf), each group in writing order. */
  private eventGroups(): { folder: string; files: MetricsFollower[] }[] {
    const byFolder = new Map<string, MetricsFollower[]>();
    for (const f of this.followers) {
      if (f.format !== 'tfevents') continue;
      const folder = eventStreamOf(this.runPath, dirName(f.path));
      let g = byFolder.get(folder);
      if (!g) byFolder.set(folder, (g = []));
      g.push(f);
    }
    const groups = [...byFolder].map(([folder, files]) => ({ folder, files: files.sort((a, b) => compareEventFiles(a.path, b.path)) }));
    return groups.sort((a, b) => (a.folder < b.folder ? -1 : a.folder > b.folder ? 1 : 0));
  }

  series(): Map<string, Series> {
    const revision = this.followers.reduce((sum, f) => sum + f.metrics.revision + f.metrics.generation, 0);
    if (this.cache && revision === this.cacheRevision) return this.cache;
    const out = new Map<string, Series>();
    const groups = this.eventGroups();
    for (const g of groups) {
      const keys: string[] = [];
      const seen = new Set<string>();
      for (const f of g.files) for (const k of f.metrics.keys()) if (!seen.has(k)) seen.add(k), keys.push(k);
      for (const key of keys) {
        const name = eventSeriesName(g.folder, key);
        const holders = g.files.filter((f) => f.metrics.has(key));
        let s: Series;
        if (holders.length === 1) s = holders[0].metrics.get(key)!;
        else {
          const id = `${g.folder}\u0000${key}\u0000${holders.map((h) => h.path).join('\u0000')}`;
          let c = this.merged.get(id);
          if (!c) this.merged.set(id, (c = new ConcatSeries(name, key, holders)));
          s = c.current();
        }
        out.set(out.has(name) ? `${baseName(g.folder) || baseName(this.runPath)}:${name}` : name, s);
      }
    }
    // By path, as a one-shot listing orders them, so a follow that found a log later names its keys the same.
    const others = this.followers.filter((f) => f.format !== 'tfevents').sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    for (const f of others) {
      for (const [key, s] of f.metrics.series) out.set(out.has(key) ? `${baseName(f.path)}:${key}` : key, s);
    }
    this.cache = out;
    this.cacheRevision = revision;
    return out;
  }
}

function dirName(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? (i === 0 ? '/' : '') : p.slice(0, i);
}

function baseName(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}
