/**
 * The checkpoint readers on hostile bytes (issue 18): random bytes, real files from the writers with bytes flipped,
 * cut or spliced. Every reader ends in a typed value or an InspectError (inspectFiles never throws at all: a file's
 * failure is its `problem`), and what the pickle reader builds is bounded by its input: at most one new value per
 * input byte.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { readPickle, walkTorchPickle, findEndRecord, readCentralDirectory, readSafetensorsHeader, inspectFiles, InspectError, Pieces, summaryLine, groupTensors, diffInspections, inspectCompleteness, type PickleValue } from '../../src/core/inspect';
import { parseInspectOutput } from '../../src/core/inspect/remoteRead';
import { RemoteRunsError } from '../../src/core/types';

const RUNS = 300;
const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
const real = ['train_state.pt', 'lightning.ckpt', 'evil.pt', 'state_dict.pt', 'dcp/.metadata', 'hf_shards/model-00001-of-00005.safetensors'].map((f) => ({ name: path.basename(f), bytes: fs.readFileSync(path.join(FIX, f)) }));
/** The pickles inside the archives (data.pkl is the first entry, stored) and DCP's .metadata. */
const pickles = [fs.readFileSync(path.join(FIX, 'dcp/.metadata')), ...['train_state.pt', 'lightning.ckpt'].map((f) => {
  const b = fs.readFileSync(path.join(FIX, f));
  const n = b.readUInt16LE(26);
  const e = b.readUInt16LE(28);
  const from = 30 + n + e;
  return b.subarray(from, from + readPickle(b, from).end - from);
})];

function typedOnly(what: string, fn: () => void): void {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof InspectError, `${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

/** Distinct values reachable from v (a DAG walk: shared values once). */
function distinct(v: PickleValue): number {
  const seen = new Set<PickleValue>();
  const todo = [v];
  while (todo.length) {
    const x = todo.pop()!;
    if (seen.has(x)) continue;
    seen.add(x);
    if (x.t === 'list' || x.t === 'tuple' || x.t === 'set') todo.push(...x.items);
    if (x.t === 'dict') for (const [k, y] of x.entries) todo.push(k, y);
    if (x.t === 'call') {
      todo.push(x.fn, x.args);
      if (x.state) todo.push(x.state);
      if (x.kwargs) todo.push(x.kwargs);
      for (const y of x.items ?? []) todo.push(y);
      for (const [k, y] of x.entries ?? []) todo.push(k, y);
    }
    if (x.t === 'persid') todo.push(x.id);
  }
  return seen.size;
}

/** A real file with some bytes changed, cut, or a slice repeated. */
const mutated = (sources: Buffer[]) =>
  fc.record({
    src: fc.constantFrom(...sources),
    flips: fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 6 }),
    cut: fc.option(fc.nat(), { nil: undefined }),
    splice: fc.option(fc.tuple(fc.nat(), fc.nat({ max: 64 }), fc.nat()), { nil: undefined }),
  }).map(({ src, flips, cut, splice }) => {
    let b = Buffer.from(src);
    for (const [at, v] of flips) b[at % b.length] = v;
    if (splice) {
      const [from, len, to] = splice;
      const piece = b.subarray(from % b.length, (from % b.length) + len);
      const at = to % b.length;
      b = Buffer.concat([b.subarray(0, at), piece, b.subarray(at)]);
    }
    if (cut !== undefined) b = b.subarray(0, cut % (b.length + 1));
    return b;
  });

const opcodeSoup = fc.array(fc.oneof(fc.constantFrom(0x80, 0x02, 0x28, 0x5d, 0x7d, 0x29, 0x61, 0x65, 0x73, 0x75, 0x74, 0x52, 0x81, 0x62, 0x71, 0x68, 0x94, 0x32, 0x4b, 0x4e, 0x85, 0x86, 0x87, 0x63, 0x0a, 0x93, 0x8c, 0x2e, 0x51, 0x30, 0x31, 0x8a, 0x8b), fc.integer({ min: 0, max: 255 })), { maxLength: 400 }).map((a) => Buffer.from(a));

test('pickle reader: random bytes, opcode soup and mutated real pickles end typed, bounded by the input', () => {
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)), opcodeSoup, mutated(pickles)), (b) => {
      typedOnly('readPickle', () => {
        const { value, end } = readPickle(b);
        assert.ok(end <= b.length);
        assert.ok(distinct(value) <= b.length + 1, `${distinct(value)} values from ${b.length} bytes`);
        typedOnly('walkTorchPickle', () => walkTorchPickle(value, { maxNodes: 100_000 }));
      });
    }),
    { numRuns: RUNS },
  );
});

test('a pickle whose memo repeats a list 2^40 times is refused by the walk bound, fast', () => {
  // [x, x], then [that, that] 40 times: 200 bytes, 2^40 values when expanded.
  const parts = [Buffer.from([0x80, 0x02, 0x4b, 0x01])];
  for (let i = 0; i < 40; i++) parts.push(Buffer.from([0x94, 0x32, 0x86])); // MEMOIZE, DUP, TUPLE2
  parts.push(Buffer.from([0x2e]));
  const { value } = readPickle(Buffer.concat(parts));
  const t0 = Date.now();
  assert.throws(() => walkTorchPickle(value, { maxNodes: 100_000, maxDepth: 1000 }), (e: unknown) => e instanceof InspectError && e.code === 'too-large');
  assert.ok(Date.now() - t0 < 5000);
});

test('zip and safetensors readers: mutated real files end typed', () => {
  fc.assert(
    fc.property(mutated(real.map((r) => r.bytes)), (b) => {
      const src = Pieces.whole(b);
      typedOnly('findEndRecord', () => {
        const dir = findEndRecord(src);
        if (dir) typedOnly('readCentralDirectory', () => readCentralDirectory(src, dir));
      });
      typedOnly('readSafetensorsHeader', () => readSafetensorsHeader(src));
    }),
    { numRuns: RUNS },
  );
});

test('inspectFiles never throws: mutated checkpoints, partial reads; every failure is a file problem', () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ name: fc.constantFrom('a.pt', 'model.safetensors', '.metadata', 'x.ckpt', 'model.safetensors.index.json', 'y.bin', '0.distcp'), b: mutated(real.map((r) => r.bytes)), head: fc.option(fc.nat(), { nil: undefined }) }), { minLength: 1, maxLength: 4 }),
      (files) => {
        const fb = files.map(({ name, b, head }, i) => ({
          name: `${i}-${name}`,
          size: b.length,
          pieces: head === undefined ? Pieces.whole(b) : new Pieces(b.length, [{ offset: 0, data: b.subarray(0, head % (b.length + 1)) }]),
        }));
        const { inspection, needMore } = inspectFiles(fb);
        for (const n of needMore) assert.ok(n.from >= 0 && n.to >= n.from, JSON.stringify(n));
        summaryLine(inspection);
        groupTensors(inspection.tensors);
        inspectCompleteness(inspection);
        diffInspections(inspection, inspection);
      },
    ),
    { numRuns: RUNS },
  );
});

test('the read protocol parser: random and cut output ends in a protocol error or files', () => {
  const good = Buffer.from('\0@rr-inspect@1\0F\x000\0ok\x005\x001.5\0C\x000\x005\0hello' + 'S\x005\x001.5\0Z\0', 'latin1');
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }).map((a) => Buffer.from(a)), mutated([good])), (b) => {
      try {
        const files = parseInspectOutput(b, 1);
        for (const f of files) for (const p of f.pieces) assert.ok(p.data.length <= b.length);
      } catch (e) {
        assert.ok(e instanceof RemoteRunsError && e.kind === 'protocol', String(e));
      }
    }),
    { numRuns: RUNS },
  );
});
