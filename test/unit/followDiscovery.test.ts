/**
 * A follow sees what the run writes next (runFeed.ts re-discovery, runSeries.ts names, series.ts later-wins): for
 * random interleavings of a run's log files appearing and growing, record by record, a follow started on an early
 * state ends with exactly the series of a one-shot read of the final state (same names, same points), within
 * RELIST_EVERY rounds of the last write. The files are real writers' output (test/fixtures/real/written/metrics:
 * torch.utils.tensorboard with add_scalars and a resume, Keras' TensorBoard callback and CSVLoggers, a run restarted
 * 10 times laid out as a Trainer's resumed `runs/<date>_<host>/` folders). Run with the local `sh` as the remote
 * shell (the same command lines the pool sends).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import type { Executor } from '../../src/core/remote';
import { runCommand } from '../../src/core/remote';
import { RELIST_EVERY, RunFeed, SETTLED_EVERY, STOPPED_ROUNDS } from '../../src/core/metrics/follow/runFeed';
import { listRunsCommand } from '../../src/core/discovery/listScript';
import type { Series } from '../../src/core/metrics';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import { LocalExecutor } from '../../src/core/eval/localExecutor';

const WRITTEN = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'metrics');

/** Commands run by a local sh: the product's own LocalExecutor (the eval runner's). */
const localSh: Executor = new LocalExecutor();

/** One file of a case: where it goes in the run, and its pieces as the writer appends them (TFRecords, CSV lines). */
interface Piece {
  rel: string;
  parts: Buffer[];
}

/** TFRecord framing (length, crc, data, crc): each record is one append of the writer. */
function records(bytes: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length; ) {
    const n = Number(bytes.readBigUInt64LE(at));
    out.push(bytes.subarray(at, at + 12 + n + 4));
    at += 12 + n + 4;
  }
  return out;
}

function lines(bytes: Buffer): Buffer[] {
  const text = bytes.toString('utf8');
  return text.split(/(?<=\n)/).map((l) => Buffer.from(l, 'utf8'));
}

function fileOf(src: string, rel: string): Piece {
  const bytes = fs.readFileSync(src);
  return { rel, parts: path.basename(src).startsWith('events.out.tfevents.') ? records(bytes) : lines(bytes) };
}

/** The cases: a run folder's files (relative paths) and what must exist before the follow starts. */
function cases(): { name: string; files: Piece[]; fixed?: string[] }[] {
  const tb = path.join(WRITTEN, 'torch_tb', 'resumed');
  const tbFiles = ['events.out.tfevents.1796148097.vm.9285.0', 'events.out.tfevents.1796148098.vm.9285.3', 'acc_train/events.out.tfevents.1796148097.vm.9285.1', 'acc_val/events.out.tfevents.1796148097.vm.9285.2'];
  const keras = path.join(WRITTEN, 'keras', 'fit');
  const kerasFiles = ['logs/train/events.out.tfevents.1796148110.vm.9285.0.v2', 'logs/validation/events.out.tfevents.1796148110.vm.9285.1.v2', 'history.csv', 'training.log'];
  const restarted = path.join(WRITTEN, 'restarted', 'run');
  const rfiles = fs.readdirSync(restarted).filter((f) => f.startsWith('events.')).sort((a, b) => Number(a.split('.')[3]) - Number(b.split('.')[3]));
  // The 11 processes as a Trainer resumed into one output_dir: a runs/<date>_<host>/ folder per process start.
  const trainer = rfiles.map((f, i) => fileOf(path.join(restarted, f), `runs/Dec01_18-0${Math.floor(i / 6)}-${String(10 + (i % 6) * 7).padStart(2, '0')}_vm${i === 0 ? '' : ''}/${f}`));
  return [
    { name: 'torch_tb', files: tbFiles.map((f) => fileOf(path.join(tb, f), f)) },
    { name: 'keras', files: kerasFiles.map((f) => fileOf(path.join(keras, f), f)) },
    // A checkpoint makes the output_dir a run whatever runs/ holds (runTree.ts).
    { name: 'trainer', files: trainer, fixed: ['checkpoint-20/model.safetensors'] },
  ];
}

/** The run's logs as a one-shot listing of `dir` finds them (the run at `dir`), through the one listing mechanism. */
async function listedMaybe(dir: string): Promise<string[] | undefined> {
  const { roots } = await runCommand(localSh, { kind: 'host', id: '' }, listRunsCommand([dir]));
  const root = roots[0];
  return root.state === 'ok' ? root.runs.find((r) => r.path === dir)?.metrics : undefined;
}

async function listed(dir: string): Promise<string[]> {
  const metrics = await listedMaybe(dir);
  assert.ok(metrics, `a run at ${dir}`);
  return metrics;
}

const refOf = (dir: string, metrics: string[]): RunRefWire => ({
  hostName: 'local', target: { kind: 'host', id: '' }, runPath: dir, runName: path.basename(dir), metrics, checkpoints: [],
});

function dump(series: Map<string, Series>): Record<string, [number, number][]> {
  const out: Record<string, [number, number][]> = {};
  for (const [name, s] of [...series].sort(([a], [b]) => (a < b ? -1 : 1))) out[name] = Array.from({ length: s.length }, (_, i) => [s.xAt(i), s.yShown(i)]);
  return out;
}

async function oneShot(dir: string): Promise<Record<string, [number, number][]>> {
  const feed = new RunFeed(refOf(dir, await listed(dir)), { executor: () => localSh, intervalMs: () => 1e9 });
  try {
    await feed.pollNow();
    return dump(feed.series());
  } finally {
    feed.dispose();
  }
}

test('a follow started early ends with the series of a one-shot read of the final state, for random interleavings of logs appearing and growing', async () => {
  const all = cases();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-followdisc-'));
  let n = 0;
  try {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...all.map((_, i) => i)),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 6 }), fc.boolean()), { minLength: 1, maxLength: 40 }),
        async (which, ops) => {
          const c = all[which];
          const dir = path.join(root, `${c.name}-${n++}`);
          fs.mkdirSync(dir);
          for (const f of c.fixed ?? []) {
            fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
            fs.writeFileSync(path.join(dir, f), 'x');
          }
          const written = c.files.map(() => 0);
          const write = (i: number, count: number): void => {
            const f = c.files[i];
            const to = Math.min(f.parts.length, written[i] + count);
            if (to === written[i]) return;
            const p = path.join(dir, f.rel);
            fs.mkdirSync(path.dirname(p), { recursive: true });
            fs.appendFileSync(p, Buffer.concat(f.parts.slice(written[i], to)));
            written[i] = to;
          };
          // The follow starts once the folder is a run (what a listing finds): as a user opens it.
          let k = 0;
          let first: string[] | undefined;
          for (; k < ops.length && first === undefined; k++) {
            write(ops[k][0] % c.files.length, ops[k][1]);
            first = await listedMaybe(dir);
          }
          if (first === undefined) {
            for (let i = 0; i < c.files.length; i++) write(i, 1);
            first = await listed(dir);
          }
          const feed = new RunFeed(refOf(dir, first), { executor: () => localSh, intervalMs: () => 1e9 });
          try {
            await feed.pollNow();
            for (const [file, count, poll] of ops.slice(k)) {
              write(file % c.files.length, count);
              if (poll) await feed.pollNow();
            }
            // Then everything the writers wrote: the final state.
            for (let i = 0; i < c.files.length; i++) write(i, Infinity);
            // Within the bounds the feed promises: a new log is listed within RELIST_EVERY rounds, and an event file
            // that a newer one of its stream replaced (here it may still grow, as random writes go) is read again
            // within SETTLED_EVERY rounds.
            for (let r = 0; r < Math.max(RELIST_EVERY, SETTLED_EVERY) + 1; r++) await feed.pollNow();
            assert.deepEqual(dump(feed.series()), await oneShot(dir), `${c.name}: the follow's series are the one-shot read's`);
          } finally {
            feed.dispose();
            fs.rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 16 },
    );
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test("names do not depend on which logs exist: Keras' train split alone is train/epoch_loss, a resumed Trainer's second runs/ folder joins train/loss", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-names-'));
  try {
    const keras = cases()[1];
    const write = (p: Piece): void => {
      fs.mkdirSync(path.dirname(path.join(dir, p.rel)), { recursive: true });
      fs.writeFileSync(path.join(dir, p.rel), Buffer.concat(p.parts));
    };
    write(keras.files[0]);
    const feed = new RunFeed(refOf(dir, await listed(dir)), { executor: () => localSh, intervalMs: () => 1e9 });
    try {
      await feed.pollNow();
      assert.ok(feed.series().has('train/epoch_loss'), [...feed.series().keys()].join(', '));
      const before = feed.relistCount;
      write(keras.files[1]);
      // The train file has stopped growing: STOPPED_ROUNDS rounds on, the next round lists the run again (before the
      // periodic RELIST_EVERY) and finds validation/.
      for (let i = 0; i <= STOPPED_ROUNDS; i++) await feed.pollNow();
      assert.ok(feed.roundCount < RELIST_EVERY, 'sooner than the periodic listing');
      assert.ok(feed.relistCount > before, 're-discovered');
      assert.ok(feed.series().has('validation/epoch_loss'), [...feed.series().keys()].join(', '));
      assert.ok(feed.series().has('train/epoch_loss'), 'the train series kept its name');
    } finally {
      feed.dispose();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
