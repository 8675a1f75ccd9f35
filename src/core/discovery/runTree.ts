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
 *   logdir's own curves. Their series are named as TensorBoard names them (src/core/metrics/series/runSeries.ts).
 *   Without event files of its own, sibling logdirs (`expA/`, `expB/`) stay runs of their own.
 * - A folder with no event files of its own whose split sub-folders (SPLIT_FOLDERS: Keras' `train/`,
 *   `validation/`) hold them is one run, those splits its series.
 * - A folder that is a run for other reasons (it has checkpoints) takes its `runs/<x>/` event folders
 *   (RUN_LOG_CONTAINERS: Hugging Face Trainer's `runs/<date>_<host>/`) and, in itself, any other CSV and Keras'
 *   `training.log` (isExtraMetricsLog). Inside `logs/` every CSV and `training.log` is a log.
 * - So is a folder whose `runs/` holds exactly one default-named logdir (`Dec03_16-11-14_vm`) and nothing else
 *   (soleDefaultLogdir): a Trainer before its first save is named by its output_dir from the start, not by its
 *   logdir until the first checkpoint appears. Several default-named logdirs without checkpoints stay separate runs.
 * - MLflow's file store: a folder holding `meta.yaml` and `metrics/` is a run (`mlruns/<exp>/<run_id>/`); every
 *   file below `metrics/` is one metric (its path there is the key), and `metrics/`, `params/`, `tags/` and
 *   `artifacts/` are never runs of their own (checkpoints directly in `artifacts/` are the run's).
 * Lightning's `lightning_logs/version_N/` (metrics.csv, event files, checkpoints/) is a run by the first rules.
 */
import { LIVE_WINDOW_MS, checkpointOrder, type Checkpoint, type CheckpointFile, type CheckpointKind, type FrameworkPointer, type Run } from '../types';
import {
  CHECKPOINT_CONTAINERS,
  DEEPSPEED_ZERO_SHARD,
  LOG_CONTAINERS,
  TEMPORARY_FILE,
  TRAINER_STATE,
  accelerateSave,
  committedAtomically,
  finalWeightFiles,
  isAccelerateSave,
  inPlaceMarker,
  incompleteReason,
  isMetricsLog,
  orbaxStep,
  parseCheckpointName,
  tfCheckpointGroups,
  pointerNames,
  trainerUnfinished,
  unfinishedMarker,
  type ParsedCheckpointName,
} from './checkpointLayout';
import { MLFLOW_META, MLFLOW_METRICS, MLFLOW_RUN_FOLDERS, RUN_LOG_CONTAINERS, SPLIT_FOLDERS, isExtraMetricsLog } from './checkpointLayout';
import { isDefaultLogdirName } from './logdirNames';
import { SKIP_TYPES, dirLinkWithin, type SkippedEntry } from '../transfer/remoteCommands';

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
  link?: string;
  text?: string;
  /** Levels below the root (a child of the root is 1). */
  depth: number;
  /** NO_CHILDREN (shared, never written) until something is put below the node. */
  children: Children;
}

/**
 * A folder's children by name, in the order they were added: the part of a Map the tree uses. Most folders of a
 * listing hold one or two entries (`step_N/checkpoint.pt`), and the tree lives through the whole parse, so every
 * young-generation collection copies it: an array of the nodes (their names are the keys) costs a third of a Map's
 * hash table, and an index by name is made only for a folder that grows past a few entries.
 */
class Children {
  private list: Node[];
  private index: Map<string, Node> | undefined;
  private lookups = 0;

  constructor(first?: Node) {
    this.list = first ? [first] : [];
  }

  get size(): number {
    return this.list.length;
  }

  get(name: string): Node | undefined {
    const list = this.list;
    if (this.index === undefined && list.length > INDEX_AFTER && ++this.lookups > SCANS_BEFORE_INDEX) this.index = new Map(list.map((n) => [n.name, n]));
    if (this.index) return this.index.get(name);
    for (let i = 0; i < list.length; i++) if (list[i].name === name) return list[i];
    return undefined;
  }

  /**
   * Adds a node whose name is not there yet (the tree looks it up first, or knows). The index is made by a large
   * folder's fifth lookup, so a folder looked up in a few times (`checkpoints/`, for its pointer files) never has one.
   */
  add(node: Node): void {
    this.list.push(node);
    this.index?.set(node.name, node);
  }

  /** The nodes, in order; the caller reads them, never changes the array. */
  values(): readonly Node[] {
    return this.list;
  }

  /** The names, in order: the folder itself, iterable over them, so nothing is made unless they are read. */
  keys(): Iterable<string> {
    return this;
  }

  *[Symbol.iterator](): IterableIterator<string> {
    for (const n of this.list) yield n.name;
  }
}

/** Past this many children a folder's lookups by name go through a Map (a scan of a few names is cheaper). */
const INDEX_AFTER = 8;
/** Lookups by scan in a large folder before it is indexed: building the Map costs more than a few scans. */
const SCANS_BEFORE_INDEX = 4;

/** The children of a node nothing was listed under: one shared empty list instead of one per file. */
const NO_CHILDREN: Children = new Children();

/**
 * An entry made in the shape of the tree's node (for a tree built with `reuse`): it becomes the node without gaining
 * fields, which would give each entry a second, out-of-object store for them.
 */
export function nodeShapedEntry(type: string, bytes: number, mtime: number, rel: string, name: string): Entry {
  const node: Node = { name, rel, type, bytes, mtime, depth: 0, children: NO_CHILDREN };
  return node;
}

/** Find the runs under one root. `rootPath` is absolute; `now` is the remote clock in ms. */
/** The folder the extension keeps beside a run (`.remote-runs/evals/…`); it never holds runs. */
const OWN_FOLDER = '.remote-runs';

export function findRuns(rootPath: string, entries: readonly Entry[], now: number, maxDepth = Infinity, options: { reuseEntries?: boolean } = {}): Run[] {
  const tree = new EntryTree(options.reuseEntries === true);
  for (const e of entries) tree.add(e);
  return findRunsInTree(rootPath, tree, now, maxDepth);
}

/** findRuns over a tree built already (the listing reader builds it while the output arrives). */
export function findRunsInTree(rootPath: string, tree: EntryTree, now: number, maxDepth = Infinity): Run[] {
  const root = tree.root;
  // One concatenation per path (a template literal makes two), so a path held by a checkpoint is one string node
  // over the shared prefix and its relative path.
  const prefix = rootPath === '/' ? '/' : `${rootPath}/`;
  const absolute = (rel: string): string => (rel === '' ? rootPath : prefix + rel);
  // A folder at the walk's depth was listed, its contents were not: what it holds is unknown, not "nothing".
  const unseen = (n: Node): boolean => n.type === 'd' && n.depth >= maxDepth;
  const runs: Run[] = [];
  const visit = (node: Node): void => {
    const found = asRun(node, absolute, now, unseen);
    if (found) runs.push(found.run);
    for (const child of node.children.values()) {
      if (child.type !== 'd' || found?.claimed.has(child)) continue;
      if (checkpointName(child) || linkedAlias(child)) continue; // a checkpoint folder (or a link to one) is never a run of its own
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

/** An entry listed again (a folder the walk printed before its own entries, a second root's copy): its latest facts. */
function refreshNode(node: Node, e: Entry): void {
  node.type = e.type;
  node.bytes = e.bytes;
  node.mtime = e.mtime;
  if (e.link !== undefined) node.link = e.link;
  if (e.text !== undefined) node.text = e.text;
}

/**
 * The folder tree of one root's entries, built one entry at a time (in find's order, parents first; a parent lost to
 * truncation is made up). With `reuse` (the listing parser hands over entries nobody else holds), each entry itself
 * becomes the tree's node: one object per entry instead of two.
 */
export class EntryTree {
  readonly root: Node = { name: '', rel: '', type: 'd', bytes: 0, mtime: 0, depth: 0, children: new Children() };
  private readonly byRel = new Map<string, Node>([['', this.root]]);
  // find prints a folder right before its contents and siblings one after another: the last parent found is
  // almost always the next one's too, so most entries cost no lookup by path.
  private lastParentRel = '';
  private lastParent: Node = this.root;
  /** addAt: the last node added at each depth of the current walk (its folder at 0). */
  private readonly stack: Node[] = [this.root];
  /**
   * addAt: whether stack[d] was made in this walk. find prints each entry once per walk, so what a folder made in
   * this walk holds is new and needs no lookup; a folder met again (a second walk, a second root's copy) is looked in.
   */
  private readonly fresh: boolean[] = [false];

  constructor(private readonly reuse: boolean) {}

  /** Adds an entry; `parentRel` and `name` (its folder's path and its name), when the caller has them, spare cutting its path. */
  add(e: Entry, parentRel?: string, name?: string): void {
    const slash = parentRel === undefined ? e.rel.lastIndexOf('/') : -1;
    if (parentRel === undefined) parentRel = slash < 0 ? '' : e.rel.slice(0, slash);
    name ??= slash < 0 ? e.rel : e.rel.slice(slash + 1);
    let parent: Node;
    if (parentRel === this.lastParentRel) parent = this.lastParent;
    else {
      parent = this.folder(parentRel);
      this.lastParentRel = parentRel;
      this.lastParent = parent;
    }
    const existing = parent.children.get(name);
    if (existing) {
      refreshNode(existing, e);
      return;
    }
    const reuse = this.reuse;
    const node: Node = reuse ? (e as Node) : { name, rel: e.rel, type: e.type, bytes: e.bytes, mtime: e.mtime, depth: 0, children: NO_CHILDREN };
    node.name = name;
    node.depth = parent.depth + 1;
    node.children = NO_CHILDREN;
    if (!reuse && e.link !== undefined) node.link = e.link;
    if (!reuse && e.text !== undefined) node.text = e.text;
    addChild(parent, node);
    // Only folders are ever looked up as parents.
    if (e.type !== 'f') this.byRel.set(e.rel, node);
  }

  /**
   * Adds an entry by its depth in the current walk (1: in the walk's folder) and its name: it lies in the last entry
   * added one level up, as find prints them (the caller has checked that there is one). Faster than `add`: no path
   * to cut, no lookup. A tree is built by one of the two, never both.
   */
  addAt(depth: number, e: Entry, name: string): void {
    const parent = this.stack[depth - 1];
    const existing = this.fresh[depth - 1] ? undefined : parent.children.get(name);
    if (existing) {
      refreshNode(existing, e);
      this.stack[depth] = existing;
      this.fresh[depth] = false;
      return;
    }
    const node: Node = this.reuse ? (e as Node) : { name, rel: e.rel, type: e.type, bytes: e.bytes, mtime: e.mtime, depth: 0, children: NO_CHILDREN };
    node.name = name;
    node.depth = parent.depth + 1;
    node.children = NO_CHILDREN;
    if (!this.reuse && e.link !== undefined) node.link = e.link;
    if (!this.reuse && e.text !== undefined) node.text = e.text;
    addChild(parent, node);
    this.stack[depth] = node;
    this.fresh[depth] = true;
  }

  /** addAt's next entries are in the root's folder NAME ('' for the root itself): the fair listing's walks. */
  walkFrom(name: string): void {
    const found = name === '' ? this.root : this.root.children.get(name);
    this.stack[0] = found ?? this.folder(name);
    this.fresh[0] = false;
  }

  private folder(rel: string): Node {
    const existing = this.byRel.get(rel);
    if (existing) return existing;
    const slash = rel.lastIndexOf('/');
    const parent = this.folder(slash < 0 ? '' : rel.slice(0, slash));
    const node: Node = { name: rel.slice(slash + 1), rel, type: 'd', bytes: 0, mtime: 0, depth: parent.depth + 1, children: NO_CHILDREN };
    addChild(parent, node);
    this.byRel.set(rel, node);
    return node;
  }
}

function addChild(parent: Node, node: Node): void {
  if (parent.children === NO_CHILDREN) parent.children = new Children(node);
  else parent.children.add(node);
}

function asRun(node: Node, absolute: (rel: string) => string, now: number, unseen: (n: Node) => boolean): { run: Run; claimed: Set<Node> } | undefined {
  const claimed = new Set<Node>();
  const skipped: SkippedEntry[] = [];
  const checkpoints = checkpointsIn(node, absolute, unseen, skipped);
  const places = [node];
  for (const name of CHECKPOINT_CONTAINERS) {
    const container = node.children.get(name);
    if (container?.type !== 'd') continue;
    const inside = checkpointsIn(container, absolute, unseen, skipped);
    if (inside.length > 0) {
      checkpoints.push(...inside);
      claimed.add(container);
      places.push(container);
    }
  }
  const final = finalWeightsOf(node, absolute, unseen);
  if (final) checkpoints.push(final);
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
    if (artifacts?.type === 'd') checkpoints.push(...checkpointsIn(artifacts, absolute, unseen, skipped));
  }
  if (checkpoints.length === 0 && logs.length === 0) return undefined;

  sortCheckpoints(checkpoints);
  deepspeedUnfinished(places, checkpoints, absolute);
  megatronUnfinished(places, checkpoints, absolute);
  markFreshWrites(places, checkpoints, absolute, now);
  markNewest(checkpoints);
  const pointers = pointersOf(places, checkpoints);
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
    ...(pointers.length > 0 ? { pointers } : {}),
    ...(skipped.length > 0 ? { skipped: skipped.map((s) => ({ ...s, relative: node.rel === '' ? s.relative : s.relative.slice(node.rel.length + 1) })) } : {}),
  };
  return { run, claimed };
}

const KIND_ORDER: Record<CheckpointKind, number> = { step: 0, epoch: 1, save: 2, alias: 3, final: 4 };

/** Steps by step, then epochs, saves, aliases, the final weights; names break ties. */
export function sortCheckpoints(checkpoints: Checkpoint[]): void {
  checkpoints.sort(
    (a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || checkpointOrder(a) - checkpointOrder(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0),
  );
}

/**
 * Mark the one `latest` names: the complete step checkpoint with the highest step; without any, the highest
 * complete epoch, then save; a run with none of those but final weights (a finished Hugging Face run's
 * `save_model` output) names those. One still being written is listed, marked, and passed over; aliases never are
 * `latest` (they name a save that is listed itself, or a copy of one).
 */
export function markNewest(checkpoints: Checkpoint[]): void {
  for (const c of checkpoints) c.newest = false;
  for (const kind of ['step', 'epoch', 'save', 'final'] as const) {
    // A link out of its folder (checkpointsIn) holds what this listing did not see.
    const candidates = checkpoints.filter((c) => c.kind === kind && c.incomplete === undefined && !c.linkOutside);
    if (candidates.length === 0) continue;
    candidates.reduce((best, c) => (checkpointOrder(c) > checkpointOrder(best) || (checkpointOrder(c) === checkpointOrder(best) && c.mtime > best.mtime) ? c : best)).newest = true;
    return;
  }
}

/**
 * The step-less final weights in the run folder itself (finalWeightFiles), as the run's checkpoint `final`: its files
 * are those weights and their companions only, never the run's other folders.
 */
function finalWeightsOf(node: Node, absolute: (rel: string) => string, unseen: (n: Node) => boolean): Checkpoint | undefined {
  const own = [...node.children.values()].filter((c) => c.type === 'f');
  const names = new Set(finalWeightFiles(own.map((c) => c.name)));
  if (names.size === 0) return undefined;
  const files: CheckpointFile[] = own
    .filter((c) => names.has(c.name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((c) => ({ name: c.name, path: absolute(c.rel), bytes: c.bytes, mtime: c.mtime }));
  const incomplete = unseen(node) ? undefined : incompleteReason(files);
  return {
    name: 'final',
    kind: 'final',
    step: null,
    layout: 'hf-final',
    path: absolute(node.rel),
    isDir: true,
    bytes: files.reduce((n, f) => n + f.bytes, 0),
    mtime: Math.max(...files.map((f) => f.mtime)),
    files,
    newest: false,
    ...(incomplete ? { incomplete } : {}),
  };
}

/**
 * A DeepSpeed tag still being saved: every data-parallel rank writes its own ZeRO shard, and rank 0 writes the
 * `latest` file only after all of them (deepspeed/runtime/engine.py save_checkpoint). A tag newer than the one
 * `latest` names that holds fewer ZeRO shards than that one is a save not finished (rank files still to come), not
 * the run's latest. (A newer tag with as many shards is complete as far as names tell: saved with save_latest=False,
 * or `latest` about to be written.)
 */
function deepspeedUnfinished(places: readonly Node[], checkpoints: Checkpoint[], absolute: (rel: string) => string): void {
  const shards = (c: Checkpoint): number => c.files.filter((f) => !f.name.includes('/') && DEEPSPEED_ZERO_SHARD.test(f.name)).length;
  for (const place of places) {
    const n = place.children.get('latest');
    if (n?.type !== 'f' || n.link !== undefined || n.text === undefined) continue;
    const means = pointerNames('latest', n.text);
    const dir = `${absolute(place.rel).replace(/\/+$/, '')}/`;
    const here = checkpoints.filter((c) => c.isDir && c.kind === 'step' && c.path.startsWith(dir) && !c.path.slice(dir.length).includes('/'));
    const named = means ? here.find((c) => means(c.name)) : undefined;
    if (!named || named.step === null) continue;
    const want = shards(named);
    if (want === 0) continue;
    for (const c of here) {
      if (c === named || c.step === null || c.step <= named.step || c.incomplete !== undefined) continue;
      const have = shards(c);
      if (have < want) c.incomplete = `${have} ZeRO optimizer shard${have === 1 ? '' : 's'} where ${named.name}, which DeepSpeed's latest file names, has ${want}: still being saved (latest is written after every rank's shard)`;
    }
  }
}

/**
 * A Megatron-LM iteration still being saved: every rank writes its `iter_{:07d}/mp_rank_XX/…` files, and after a
 * barrier rank 0 writes the iteration into `latest_checkpointed_iteration.txt` (megatron/training/checkpointing.py,
 * save_checkpoint's iter_finalize_fn; with --async-save it runs once the background write has finished). An
 * `iter_N` newer than the iteration the tracker names is a save not finished (or one that died before it was).
 */
function megatronUnfinished(places: readonly Node[], checkpoints: Checkpoint[], absolute: (rel: string) => string): void {
  for (const place of places) {
    const n = place.children.get('latest_checkpointed_iteration.txt');
    if (n?.type !== 'f' || n.link !== undefined || n.text === undefined) continue;
    const says = n.text.trim();
    if (!/^\d+$/.test(says)) continue;
    const tracked = Number(says);
    const dir = `${absolute(place.rel).replace(/\/+$/, '')}/`;
    for (const c of checkpoints) {
      if (c.layout !== 'iter_N' || c.step === null || c.step <= tracked || c.incomplete !== undefined) continue;
      if (!c.path.startsWith(dir) || c.path.slice(dir.length).includes('/')) continue;
      c.incomplete = `newer than iteration ${tracked}, which latest_checkpointed_iteration.txt names: Megatron-LM is still saving it (the tracker is written after the save)`;
    }
  }
}

/**
 * A write in progress seen by its clock: a checkpoint whose newest file changed less than FRESH_WRITE_MS before the
 * listing's remote clock is being written, unless a marker put in place whole after the save says it is done
 * (committedAtomically: DCP's .metadata, Orbax's commit files; TensorFlow's `.index`; a DeepSpeed `latest` or
 * Megatron-LM tracker file naming it or a later one). A writer that writes straight to the final name (torch.save to a
 * path, Keras' `model.save`, Composer's checkpoint file, Lightning's `_atomic_save` when fsspec's temporary file lies
 * on another file system and shutil.move copies it, and the Trainer's and accelerate's last files: inPlaceMarker)
 * updates the file's mtime with every write, so a file still growing is always this fresh.
 */
function markFreshWrites(places: readonly Node[], checkpoints: Checkpoint[], absolute: (rel: string) => string, now: number): void {
  if (!(now > 0)) return;
  let pointed: Map<string, number> | undefined;
  for (const c of checkpoints) {
    // Within the window on either side: a file system whose clock runs ahead of the host's (NFS) stamps writes ahead.
    if (c.incomplete !== undefined || c.partialSize || c.linkOutside || c.mtime <= 0 || Math.abs(now - c.mtime) >= FRESH_WRITE_MS) continue;
    if (c.isDir && committedAtomically(c.files)) continue;
    // TensorFlow's `.index` is written after the data shards (tfCheckpointGroups marks a prefix without it).
    if (c.layout === 'tf' && c.fileGroup) continue;
    if (c.step !== null && (c.layout === 'global_stepN' || c.layout === 'iter_N')) {
      pointed ??= pointerSteps(places, absolute);
      const dir = c.path.slice(0, c.path.lastIndexOf('/') + 1);
      const says = pointed.get(dir);
      if (says !== undefined && c.step <= says) continue;
    }
    const ago = Math.max(0, Math.round((now - c.mtime) / 100) / 10);
    const last = c.isDir ? inPlaceMarker(c.files) : undefined;
    c.incomplete = last
      ? `${FRESH_WRITE_REASON} ${ago} s before the listing: ${last}, which its framework writes last and in place, may not be whole yet`
      : `${FRESH_WRITE_REASON} ${ago} s before the listing, and no marker of its framework says the save is done`;
  }
}

/** Written less than this before the listing's remote clock: being written (markFreshWrites). */
export const FRESH_WRITE_MS = 5000;
const FRESH_WRITE_REASON = 'being written: changed';

/** Was this checkpoint taken for one being written by its clock alone (markFreshWrites)? A later listing may find it done. */
export function isFreshWrite(c: Pick<Checkpoint, 'incomplete'>): boolean {
  return c.incomplete?.startsWith(FRESH_WRITE_REASON) === true;
}

/** The step each place's DeepSpeed `latest` or Megatron-LM tracker names, by the place's path with a trailing `/`. */
function pointerSteps(places: readonly Node[], absolute: (rel: string) => string): Map<string, number> {
  const out = new Map<string, number>();
  for (const place of places) {
    const dir = `${absolute(place.rel).replace(/\/+$/, '')}/`;
    for (const file of ['latest', 'latest_checkpointed_iteration.txt']) {
      const text = place.children.get(file)?.text?.trim();
      const m = text === undefined ? null : file === 'latest' ? /^global_step(\d+)$/.exec(text) : /^(\d+)$/.exec(text);
      if (m) out.set(dir, Math.max(out.get(dir) ?? 0, Number(m[1])));
    }
  }
  return out;
}

/** DeepSpeed's `latest` and Megatron-LM's tracker file beside the checkpoints: what they name, and where that disagrees with us. */
function pointersOf(places: readonly Node[], checkpoints: Checkpoint[]): FrameworkPointer[] {
  const out: FrameworkPointer[] = [];
  const ours = checkpoints.find((c) => c.newest);
  for (const place of places) {
    // TensorFlow's `checkpoint` state file only where TensorFlow's checkpoints are (the name alone is too common).
    const tf = checkpoints.some((c) => c.layout === 'tf');
    for (const file of tf ? ['latest', 'latest_checkpointed_iteration.txt', 'checkpoint'] : ['latest', 'latest_checkpointed_iteration.txt']) {
      const n = place.children.get(file);
      if (n?.type !== 'f' || n.link !== undefined) continue;
      const who = file === 'latest' ? "DeepSpeed's latest file" : file === 'checkpoint' ? "TensorFlow's checkpoint file" : "Megatron-LM's latest_checkpointed_iteration.txt";
      if (n.text === undefined) {
        out.push({ file, says: '', note: `${who} is there, its contents were not in the listing` });
        continue;
      }
      const text = n.text.trim();
      const means = pointerNames(file, text);
      const says = file === 'checkpoint' ? (/^model_checkpoint_path:\s*"([^"\n]+)"/m.exec(text)?.[1] ?? text.split('\n')[0]) : text;
      const named = means ? checkpoints.find((c) => c.kind !== 'alias' && means(c.name)) : undefined;
      if (!named) {
        out.push({ file, says, note: `${who} names ${JSON.stringify(says)}, which is not among the checkpoints listed` });
        continue;
      }
      (named.pointedBy ??= []).push(file);
      const note =
        named.incomplete !== undefined
          ? `${who} names ${named.name}, which looks incomplete here (${named.incomplete})`
          : ours && ours !== named
            ? `${who} names ${named.name}; the newest complete checkpoint listed is ${ours.name}`
            : undefined;
      out.push({ file, says, checkpoint: named.name, ...(note ? { note } : {}) });
    }
  }
  return out;
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
  if (isRun || ownEvents || splits.length > 0 || soleDefaultLogdir(node)) {
    for (const name of RUN_LOG_CONTAINERS) {
      const container = node.children.get(name);
      if (container?.type === 'd' && !claimed.has(container)) take(container);
    }
    for (const c of node.children.values()) if (c.type === 'f' && isExtraMetricsLog(c.name) && !logs.includes(c)) logs.push(c);
  }
}

/**
 * Does `node` hold a `runs/` (RUN_LOG_CONTAINERS) whose only entry is one TensorBoard logdir named as Trainer and
 * torch's SummaryWriter name it by default (logdirNames.ts DEFAULT_LOGDIR: transformers/training_args.py
 * `default_logdir`, torch/utils/tensorboard/writer.py `SummaryWriter.__init__`), with only event files in it? Then
 * the folder is the run (a Trainer before its first save: its output_dir holds nothing else yet), so the run's
 * address does not change when its first checkpoint appears. Several such logdirs and no checkpoints stay runs of
 * their own (a SummaryWriter sweep), as does a logdir holding anything else.
 */
function soleDefaultLogdir(node: Node): boolean {
  for (const name of RUN_LOG_CONTAINERS) {
    const container = node.children.get(name);
    if (container?.type !== 'd' || container.children.size !== 1) continue;
    const only = container.children.values()[0];
    if (only.type === 'd' && isDefaultLogdirName(only.name) && eventSubtree(only) !== undefined) return true;
  }
  return false;
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

/**
 * The checkpoints directly in `dir`. `notCheckpoints` gets the entries named as checkpoints that are neither a file
 * nor a folder (a broken `last.ckpt` link, a FIFO), with why, by their path below the root.
 */
function checkpointsIn(dir: Node, absolute: (rel: string) => string, unseen: (n: Node) => boolean, notCheckpoints: SkippedEntry[]): Checkpoint[] {
  const out: Checkpoint[] = [];
  const links = new Map<Checkpoint, string>();
  const folderLinks: Checkpoint[] = [];
  // NeMo's `-unfinished` markers are rare: look one up per checkpoint only in a folder that holds one.
  let markers = false;
  // Whether this folder holds accelerate saves or Trainer checkpoints that are complete: a sibling of those still
  // being written is one of them (accelerateSave, trainerUnfinished).
  let accelerate = false;
  let trainer = false;
  const kids = dir.children.values();
  for (let i = 0; i < kids.length; i++) {
    const k = kids[i];
    if (k.name.endsWith('-unfinished')) markers = true;
    if (k.type !== 'd' || !k.name.startsWith('checkpoint')) continue;
    if (isAccelerateSave(k.name, k.children.keys())) accelerate = true;
    else if (k.children.get(TRAINER_STATE)?.type === 'f') trainer = true;
  }
  for (const child of kids) {
    if (child.type !== 'd' && child.type !== 'f') {
      if (parseCheckpointName(child.name.replace(TEMPORARY_FILE, ''), false) || linkedAlias(child)) {
        notCheckpoints.push({ relative: child.rel, why: SKIP_TYPES[child.type] ?? 'other', ...(child.link !== undefined ? { link: child.link } : {}) });
      }
      continue;
    }
    // A file under a temporary name (`epoch=0-step=10.ckpt.tmp`) is the checkpoint it will be, still being written.
    const temp = child.type === 'f' && TEMPORARY_FILE.test(child.name);
    const parsed = checkpointName(child, accelerate) ?? (temp ? parseCheckpointName(child.name.replace(TEMPORARY_FILE, ''), false) : undefined) ?? linkedAlias(child);
    if (!parsed) continue;
    const isDir = child.type === 'd';
    // A link to a folder (listScript.ts never walks one): what it holds is not this listing's to count.
    const linked = isDir && child.link !== undefined;
    const skipped: SkippedEntry[] = [];
    const files = isDir && !linked ? checkpointFiles(child, absolute, skipped) : [];
    const marker = markers ? unfinishedMarker(child.name) : undefined;
    const deep = isDir && !linked && reachesDepth(child, unseen);
    // Below the walk's depth nothing can be told from the files: not marked (their sizes are not known either).
    const incomplete: string | undefined =
      ('incomplete' in parsed && typeof parsed.incomplete === 'string' ? parsed.incomplete : undefined) ??
      (temp ? `${child.name} is a temporary name: still being written` : undefined) ??
      (marker !== undefined && dir.children.get(marker)?.type === 'f' ? `NeMo's ${marker} marker is beside it (removed when the save is finished)` : undefined) ??
      (isDir && !deep && !linked ? (incompleteReason(files) ?? trainerUnfinished(child.name, child.children.keys(), trainer)) : undefined);
    let bytes = isDir ? 0 : child.bytes;
    let mtime = child.mtime;
    for (const f of files) {
      bytes += f.bytes;
      if (f.mtime > mtime) mtime = f.mtime;
    }
    const ck: Checkpoint = { name: child.name, kind: parsed.kind, step: parsed.step, layout: parsed.layout, path: absolute(child.rel), isDir, bytes, mtime, files, newest: false };
    if (parsed.epoch !== undefined) ck.epoch = parsed.epoch;
    if (parsed.save !== undefined) ck.save = parsed.save;
    if (parsed.alias) ck.alias = { ...parsed.alias };
    if (incomplete) ck.incomplete = incomplete;
    if (deep) ck.partialSize = true;
    if (skipped.length > 0) ck.skipped = skipped;
    if (linked) {
      ck.link = child.link;
      folderLinks.push(ck);
    }
    out.push(ck);
    if (child.link !== undefined && ck.kind === 'alias') links.set(ck, child.link);
  }
  // A checkpoint that is a link to a folder: one to a sibling listed here (relative, no `..`: the rule the pull's walk
  // applies to the folder it is asked for, transfer/remoteCommands.ts) holds what that sibling holds; any other leaves
  // the folder it is in and is not followed: listed as a link with its target, its size unknown, never `latest`.
  for (const ck of folderLinks) {
    const link = ck.link!;
    const within = !link.startsWith('/') && !link.split('/').includes('..');
    const to = within ? out.find((c) => c !== ck && c.link === undefined && c.isDir && c.path === normalizeRemotePath(`${absolute(dir.rel)}/${link}`)) : undefined;
    if (to) {
      ck.bytes = to.bytes;
      ck.mtime = to.mtime;
      ck.files = to.files;
      if (to.incomplete !== undefined) ck.incomplete = to.incomplete;
      if (to.partialSize) ck.partialSize = true;
    } else ck.linkOutside = true;
  }
  // TensorFlow's prefix checkpoints: a group of files of this folder each (checkpointLayout.ts tfCheckpointGroups).
  let tfData = false;
  for (let i = 0; i < kids.length; i++) if (kids[i].name.includes('.data-')) tfData = true;
  if (tfData) {
    for (const g of tfCheckpointGroups(dir.children.keys())) {
      const nodes = g.files.map((n) => dir.children.get(n)!).filter((n) => n.type === 'f');
      const files: CheckpointFile[] = nodes.map((n) => ({ name: n.name, path: absolute(n.rel), bytes: n.bytes, mtime: n.mtime }));
      const ck: Checkpoint = {
        name: g.prefix,
        kind: g.parsed.kind,
        step: g.parsed.step,
        layout: 'tf',
        path: absolute(dir.rel),
        isDir: true,
        fileGroup: true,
        bytes: files.reduce((n, f) => n + f.bytes, 0),
        mtime: Math.max(...files.map((f) => f.mtime)),
        files,
        newest: false,
      };
      if (g.parsed.save !== undefined) ck.save = g.parsed.save;
      if (g.incomplete) ck.incomplete = g.incomplete;
      out.push(ck);
    }
  }
  // A `last`/`best`/`latest` symlink (Lightning's save_last="link": os.symlink(relpath(filepath, dirname(linkpath)),
  // linkpath) in model_checkpoint.py _link_checkpoint; Composer's latest-rank{rank}.pt) names the save it points to.
  for (const [alias, link] of links) {
    const dirPath = absolute(dir.rel);
    const target = link.startsWith('/') ? normalizeRemotePath(link) : normalizeRemotePath(`${dirPath}/${link}`);
    const to = out.find((c) => c !== alias && c.path === target);
    if (!to || !alias.alias) continue;
    alias.alias = { role: alias.alias.role, of: to.name, ...(to.step !== null ? { step: to.step } : alias.alias.step !== undefined ? { step: alias.alias.step } : {}), how: 'symlink' };
    (to.pointedBy ??= []).push(alias.name);
  }
  return out;
}

/** A symlink named `latest`, `last` or `best` (any extension) is an alias whatever it points to; resolved above. */
function linkedAlias(node: Node): ParsedCheckpointName | undefined {
  if (node.link === undefined) return undefined;
  const m = /^(latest|last|best)(?:\.[a-z.]+)?$/i.exec(node.name);
  return m ? { kind: 'alias', step: null, layout: 'flat', alias: { role: m[1].toLowerCase() as 'latest' | 'last' | 'best', how: 'unknown' } } : undefined;
}

/** `/a/./b/../c` → `/a/c`: a remote (POSIX) path, lexically (a link's target is not followed). */
export function normalizeRemotePath(p: string): string {
  const out: string[] = [];
  for (const part of p.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') out.pop();
    else out.push(part);
  }
  return `/${out.join('/')}`;
}

/** True when a folder, or one below it, lies at the walk's depth (its contents were not listed). */
function reachesDepth(node: Node, unseen: (n: Node) => boolean): boolean {
  if (unseen(node)) return true;
  for (const c of node.children.values()) if (c.type === 'd' && reachesDepth(c, unseen)) return true;
  return false;
}

/** A checkpoint by its name, or (Orbax's bare step folders) by its name and the files it holds. */
function checkpointName(node: Node, siblingsAreAccelerate = false): (ParsedCheckpointName & { incomplete?: string }) | undefined {
  if (node.type !== 'd' && node.type !== 'f') return undefined;
  if (node.type !== 'd') return parseCheckpointName(node.name, false);
  // The child names are read only for the names that need them (checkpoint_N, bare numbers), from the map itself.
  return accelerateSave(node.name, node.children.keys(), siblingsAreAccelerate) ?? parseCheckpointName(node.name, true) ?? orbaxStep(node.name, node.children.keys());
}

/**
 * Every file below a checkpoint folder; names are relative to the folder (`model/pytorch_model.bin`). What is not a
 * file goes to `skipped` with why, as a pull skips it (transfer/remoteCommands.ts parseWalk): special files (what a
 * link leads to: a FIFO, `/dev/zero`), broken links, and links to folders outside the checkpoint (never walked); a
 * link to a folder inside it is neither (its files are counted where they are). None of them counts as bytes.
 */
function checkpointFiles(dir: Node, absolute: (rel: string) => string, skipped: SkippedEntry[]): CheckpointFile[] {
  // Most hold one file: an array of exactly that (one filled by push keeps room for 17, and these outlive the parse).
  const kids = dir.children.values();
  if (kids.length === 1 && kids[0].type === 'f') {
    const only = kids[0];
    return [{ name: only.name, path: absolute(only.rel), bytes: only.bytes, mtime: only.mtime }];
  }
  return filesUnder(dir, '', absolute, [], skipped).slice();
}

function filesUnder(dir: Node, prefix: string, absolute: (rel: string) => string, out: CheckpointFile[], skipped: SkippedEntry[]): CheckpointFile[] {
  // Most checkpoint folders hold one or two files: sort (a copy) only when there is an order to make.
  const children = dir.children.size > 1 ? [...dir.children.values()].sort(byName) : dir.children.values();
  for (const child of children) {
    const name = prefix ? `${prefix}/${child.name}` : child.name;
    if (child.type === 'f') out.push({ name, path: absolute(child.rel), bytes: child.bytes, mtime: child.mtime });
    else if (child.type === 'd' && child.link !== undefined) {
      if (!dirLinkWithin(name, child.link)) skipped.push({ relative: name, why: 'dir-link-outside', link: child.link });
    } else if (child.type === 'd') filesUnder(child, name, absolute, out, skipped);
    else skipped.push({ relative: name, why: SKIP_TYPES[child.type] ?? 'other', ...(child.link !== undefined ? { link: child.link } : {}) });
  }
  return out;
}

function byName(a: Node, b: Node): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function baseName(path: string): string {
  if (path === '/') return '/';
  return path.slice(path.lastIndexOf('/') + 1);
}
