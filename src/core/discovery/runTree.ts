/**
 * Which folders of a listed tree are runs, and what their checkpoints are. Pure: takes the flat entry list of
 * one root (relative paths, as `find -printf %P` gives them) and returns Runs with absolute paths.
 *
 * A folder is a run when it holds checkpoints (directly, or in `checkpoints/`, `ckpt/`, `ckpts/`) or a metrics
 * log (directly, or in `logs/` and one folder below it). The root itself can be a run (`/workspace` holding
 * `checkpoints/step_N/`), and so can any folder below it that is not already part of a run: a run's checkpoint
 * folders and the `checkpoints/` and `logs/` folders it drew from are never searched for further runs, its
 * other subfolders are. A Hugging Face run without a log of its own uses its newest checkpoint's
 * `trainer_state.json` (that file holds the whole `log_history`).
 *
 * Metrics logs, and which folders with event files are series of a run rather than runs of their own:
 * - A folder holding event files itself is a TensorBoard logdir, and every sub-folder below it whose logs are
 *   only event files (and that holds no checkpoints) is part of that run: `add_scalars` writes
 *   `<logdir>/<main_tag>_<tag>/`, `add_hparams` `<logdir>/<time>/`, and TensorBoard shows them beside the
 *   logdir's own curves. Their series are named as TensorBoard names them (src/core/metrics/runSeries.ts).
 *   Without event files of its own, sibling logdirs (`expA/`, `expB/`) stay runs of their own.
 * - A folder with no event files of its own whose split sub-folders (SPLIT_FOLDERS: Keras' `train/`,
 *   `validation/`) hold them is one run, those splits its series.
 * - A folder that is a run for other reasons (it has checkpoints) takes its `runs/<x>/` event folders
 *   (RUN_LOG_CONTAINERS: Hugging Face Trainer's `runs/<date>_<host>/`) and, in itself, any other CSV and Keras'
 *   `training.log` (isExtraMetricsLog). Inside `logs/` every CSV and `training.log` is a log.
 * - MLflow's file store: a folder holding `meta.yaml` and `metrics/` is a run (`mlruns/<exp>/<run_id>/`); every
 *   file below `metrics/` is one metric (its path there is the key), and `metrics/`, `params/`, `tags/` and
 *   `artifacts/` are never runs of their own (checkpoints directly in `artifacts/` are the run's).
 * Lightning's `lightning_logs/version_N/` (metrics.csv, event files, checkpoints/) is a run by the first rules.
 */
import { LIVE_WINDOW_MS, type Checkpoint, type CheckpointFile, type Run } from '../types';
import { CHECKPOINT_CONTAINERS, LOG_CONTAINERS, incompleteReason, isMetricsLog, orbaxStep, parseCheckpointName, type ParsedCheckpointName } from './checkpointLayout';
import { MLFLOW_META, MLFLOW_METRICS, MLFLOW_RUN_FOLDERS, RUN_LOG_CONTAINERS, SPLIT_FOLDERS, isExtraMetricsLog } from './checkpointLayout';

/** One listed entry: `type` as find's %y (f file, d folder, l broken link…), mtime in ms. */
export interface Entry {
  type: string;
  bytes: number;
  mtime: number;
  /** Path relative to the root, `/`-separated, never empty. */
  rel: string;
  /** A symlink's target as readlink prints it (`type` is then the type of what it points to, or `l` when dangling). */
  link?: string;
  /** A small pointer file's contents (DeepSpeed `latest`, Megatron `latest_checkpointed_iteration.txt`, TF `checkpoint`). */
  text?: string;
}

interface Node {
  name: string;
  rel: string;
  type: string;
  bytes: number;
  mtime: number;
  /** Levels below the root (a child of the root is 1). */
  depth: number;
  /** NO_CHILDREN (shared, never written) until something is put below the node. */
  children: Map<string, Node>;
}

/** The children of a node nothing was listed under: one shared empty map instead of one per file. */
const NO_CHILDREN: ReadonlyMap<string, Node> = new Map();

/** Find the runs under one root. `rootPath` is absolute; `now` is the remote clock in ms. */
/** The folder the extension keeps beside a run (`.remote-runs/evals/…`); it never holds runs. */
const OWN_FOLDER = '.remote-runs';

export function findRuns(rootPath: string, entries: readonly Entry[], now: number, maxDepth = Infinity): Run[] {
  const root = buildTree(entries);
  const absolute = (rel: string): string => (rel === '' ? rootPath : rootPath === '/' ? `/${rel}` : `${rootPath}/${rel}`);
  // A folder at the walk's depth was listed, its contents were not: what it holds is unknown, not "nothing".
  const unseen = (n: Node): boolean => n.type === 'd' && n.depth >= maxDepth;
  const runs: Run[] = [];
  const visit = (node: Node): void => {
    const found = asRun(node, absolute, now, unseen);
    if (found) runs.push(found.run);
    for (const child of node.children.values()) {
      if (child.type !== 'd' || found?.claimed.has(child)) continue;
      if (checkpointName(child)) continue; // a checkpoint folder is never a run of its own
      if (child.name === OWN_FOLDER) continue; // our eval records (results.jsonl looks like a metrics log) are no run
      visit(child);
    }
  };
  visit(root);
  nameRuns(runs, rootPath);
  return runs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * A run is named by its shortest path below the root that no other run's path ends with: `seed1` while it is the only
 * one, `expA/seed1` beside `expB/seed1`, Hydra's `2026-11-30/12-00-00` beside the same time on another day. The root
 * itself, when it is a run, is named by its folder's name.
 */
function nameRuns(runs: Run[], rootPath: string): void {
  const prefix = rootPath === '/' ? '/' : `${rootPath}/`;
  const rels = runs.map((r) => (r.path === rootPath ? [] : r.path.slice(prefix.length).split('/')));
  const rootName = rels.some((r) => r.length === 0) ? baseName(rootPath) : undefined;
  runs.forEach((run, i) => {
    const own = rels[i];
    if (own.length === 0) {
      run.name = baseName(rootPath);
      return;
    }
    for (let k = 1; k <= own.length; k++) {
      const suffix = own.slice(-k).join('/');
      const clash = suffix === rootName || rels.some((other, j) => j !== i && other.length >= k && other.slice(-k).join('/') === suffix);
      if (!clash || k === own.length) {
        run.name = suffix;
        return;
      }
    }
  });
}

function buildTree(entries: readonly Entry[]): Node {
  const root: Node = { name: '', rel: '', type: 'd', bytes: 0, mtime: 0, depth: 0, children: new Map() };
  const byRel = new Map<string, Node>([['', root]]);
  const childrenOf = (node: Node): Map<string, Node> => {
    if (node.children === NO_CHILDREN) node.children = new Map();
    return node.children;
  };
  const folder = (rel: string): Node => {
    const existing = byRel.get(rel);
    if (existing) return existing;
    // Parents come before children in find's order; this covers a parent lost to truncation.
    const slash = rel.lastIndexOf('/');
    const parent = folder(slash < 0 ? '' : rel.slice(0, slash));
    const node: Node = { name: rel.slice(slash + 1), rel, type: 'd', bytes: 0, mtime: 0, depth: parent.depth + 1, children: NO_CHILDREN as Map<string, Node> };
    childrenOf(parent).set(node.name, node);
    byRel.set(rel, node);
    return node;
  };
  for (const e of entries) {
    const slash = e.rel.lastIndexOf('/');
    const parent = folder(slash < 0 ? '' : e.rel.slice(0, slash));
    const name = slash < 0 ? e.rel : e.rel.slice(slash + 1);
    const existing = parent.children.get(name);
    if (existing) {
      existing.type = e.type;
      existing.bytes = e.bytes;
      existing.mtime = e.mtime;
      continue;
    }
    const node: Node = { name, rel: e.rel, type: e.type, bytes: e.bytes, mtime: e.mtime, depth: parent.depth + 1, children: NO_CHILDREN as Map<string, Node> };
    childrenOf(parent).set(name, node);
    // Only folders are ever looked up as parents.
    if (e.type !== 'f') byRel.set(e.rel, node);
  }
  return root;
}

function asRun(node: Node, absolute: (rel: string) => string, now: number, unseen: (n: Node) => boolean): { run: Run; claimed: Set<Node> } | undefined {
  const claimed = new Set<Node>();
  const checkpoints = checkpointsIn(node, absolute, unseen);
  for (const name of CHECKPOINT_CONTAINERS) {
    const container = node.children.get(name);
    if (container?.type !== 'd') continue;
    const inside = checkpointsIn(container, absolute, unseen);
    if (inside.length > 0) {
      checkpoints.push(...inside);
      claimed.add(container);
    }
  }
  const logs: Node[] = [...node.children.values()].filter((c) => c.type === 'f' && isMetricsLog(c.name, 'run'));
  for (const name of LOG_CONTAINERS) {
    const container = node.children.get(name);
    if (container?.type !== 'd') continue;
    const inside = [container, ...[...container.children.values()].filter((c) => c.type === 'd')]
      .flatMap((dir) => [...dir.children.values()])
      .filter((c) => c.type === 'f' && isMetricsLog(c.name, 'logs'));
    if (inside.length > 0) {
      logs.push(...inside);
      claimed.add(container);
    }
  }
  metricsLogs(node, checkpoints.length > 0 || logs.length > 0, logs, claimed);
  const mlflow = mlflowRun(node, claimed);
  if (mlflow) {
    logs.push(...mlflow);
    const artifacts = node.children.get('artifacts');
    if (artifacts?.type === 'd') checkpoints.push(...checkpointsIn(artifacts, absolute, unseen));
  }
  if (checkpoints.length === 0 && logs.length === 0) return undefined;

  checkpoints.sort((a, b) => a.step - b.step || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  // `latest` is the newest complete checkpoint: one still being written is listed, marked, and passed over.
  const newest = [...checkpoints].reverse().find((c) => c.incomplete === undefined);
  if (newest) newest.newest = true;
  const metrics = logs.map((l) => absolute(l.rel));
  let metricsMtime = Math.max(0, ...logs.map((l) => l.mtime));
  if (logs.length === 0) {
    const hf = [...checkpoints].reverse().find((c) => c.isDir && c.files.some((f) => f.name === 'trainer_state.json'));
    const state = hf?.files.find((f) => f.name === 'trainer_state.json');
    if (state) {
      metrics.push(state.path);
      metricsMtime = state.mtime;
    }
  }
  const run: Run = {
    name: node.name,
    path: absolute(node.rel),
    metrics: metrics.sort(),
    checkpoints,
    metricsMtime,
    live: metricsMtime > 0 && now - metricsMtime <= LIVE_WINDOW_MS,
  };
  return { run, claimed };
}

const isEventFile = (n: Node): boolean => n.type === 'f' && n.name.startsWith('events.out.tfevents.');

/**
 * The metrics rules beyond a folder's own logs and its `logs/` (see the file comment): event sub-folders of a
 * TensorBoard logdir, split sub-folders, a run's `runs/<x>/` and its other CSVs. Adds to `logs` and `claimed`.
 */
function metricsLogs(node: Node, isRun: boolean, logs: Node[], claimed: Set<Node>): void {
  const take = (dir: Node): void => {
    const files = eventSubtree(dir);
    if (!files) return;
    logs.push(...files);
    claimed.add(dir);
  };
  const ownEvents = [...node.children.values()].some(isEventFile);
  const splits = SPLIT_FOLDERS.map((n) => node.children.get(n)).filter((c): c is Node => c?.type === 'd' && [...c.children.values()].some(isEventFile));
  for (const child of node.children.values()) {
    if (child.type !== 'd' || claimed.has(child) || checkpointName(child)) continue;
    if (ownEvents || splits.includes(child)) take(child);
  }
  if (isRun || ownEvents || splits.length > 0) {
    for (const name of RUN_LOG_CONTAINERS) {
      const container = node.children.get(name);
      if (container?.type === 'd' && !claimed.has(container)) take(container);
    }
    for (const c of node.children.values()) if (c.type === 'f' && isExtraMetricsLog(c.name) && !logs.includes(c)) logs.push(c);
  }
}

/**
 * The event files of a folder and the folders below it (a few levels), when its metrics logs are only event
 * files and it holds no checkpoints; undefined otherwise (it is a run of its own, or not a log folder).
 */
function eventSubtree(dir: Node): Node[] | undefined {
  const out: Node[] = [];
  let other = false;
  const walk = (d: Node, depth: number): void => {
    for (const c of d.children.values()) {
      if (checkpointName(c) || (c.type === 'd' && CHECKPOINT_CONTAINERS.includes(c.name))) other = true;
      else if (c.type === 'f') {
        if (isEventFile(c)) out.push(c);
        else if (isMetricsLog(c.name, 'run') || c.name === MLFLOW_META) other = true;
      } else if (c.type === 'd' && depth < 3) walk(c, depth + 1);
    }
  };
  walk(dir, 0);
  return out.length > 0 && !other ? out : undefined;
}

/** An MLflow run folder's metric files (every file below `metrics/`), claiming its MLflow folders. */
function mlflowRun(node: Node, claimed: Set<Node>): Node[] | undefined {
  const meta = node.children.get(MLFLOW_META);
  const metrics = node.children.get(MLFLOW_METRICS);
  if (meta?.type !== 'f' || metrics?.type !== 'd') return undefined;
  const files: Node[] = [];
  const walk = (dir: Node): void => {
    for (const c of dir.children.values()) {
      if (c.type === 'f') files.push(c);
      else if (c.type === 'd') walk(c);
    }
  };
  walk(metrics);
  for (const name of MLFLOW_RUN_FOLDERS) {
    const c = node.children.get(name);
    if (c?.type === 'd') claimed.add(c);
  }
  return files;
}

function checkpointsIn(dir: Node, absolute: (rel: string) => string, unseen: (n: Node) => boolean): Checkpoint[] {
  const out: Checkpoint[] = [];
  for (const child of dir.children.values()) {
    if (child.type !== 'd' && child.type !== 'f') continue;
    const parsed = checkpointName(child);
    if (!parsed) continue;
    const files = child.type === 'd' ? filesUnder(child, '', absolute) : [];
    // Below the walk's depth nothing can be told from the files: not marked (their sizes are not known either).
    const incomplete = parsed.incomplete ?? (child.type === 'd' && !reachesDepth(child, unseen) ? incompleteReason(files) : undefined);
    out.push({
      name: child.name,
      step: parsed.step,
      layout: parsed.layout,
      path: absolute(child.rel),
      isDir: child.type === 'd',
      bytes: child.type === 'd' ? files.reduce((sum, f) => sum + f.bytes, 0) : child.bytes,
      mtime: Math.max(child.mtime, ...files.map((f) => f.mtime)),
      files,
      newest: false,
      ...(incomplete ? { incomplete } : {}),
    });
  }
  return out;
}

/** True when a folder, or one below it, lies at the walk's depth (its contents were not listed). */
function reachesDepth(node: Node, unseen: (n: Node) => boolean): boolean {
  if (unseen(node)) return true;
  for (const c of node.children.values()) if (c.type === 'd' && reachesDepth(c, unseen)) return true;
  return false;
}

/** A checkpoint by its name, or (Orbax's bare step folders) by its name and the files it holds. */
function checkpointName(node: Node): (ParsedCheckpointName & { incomplete?: string }) | undefined {
  if (node.type !== 'd' && node.type !== 'f') return undefined;
  const byName = parseCheckpointName(node.name, node.type === 'd');
  if (byName || node.type !== 'd') return byName;
  return orbaxStep(node.name, [...node.children.keys()]);
}

/** Every file below a checkpoint folder; names are relative to the folder (`model/pytorch_model.bin`). */
function filesUnder(dir: Node, prefix: string, absolute: (rel: string) => string): CheckpointFile[] {
  const out: CheckpointFile[] = [];
  for (const child of [...dir.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const name = prefix ? `${prefix}/${child.name}` : child.name;
    if (child.type === 'f') out.push({ name, path: absolute(child.rel), bytes: child.bytes, mtime: child.mtime });
    else if (child.type === 'd') out.push(...filesUnder(child, name, absolute));
  }
  return out;
}

function baseName(path: string): string {
  if (path === '/') return '/';
  return path.slice(path.lastIndexOf('/') + 1);
}
