/**
 * safetensors files the safetensors library refuses are refused by inspect too, in the library's words: the files
 * are the library's own (test/fixtures/real/make_refused.py: a file save_file wrote, then its header bytes edited),
 * and expected.json holds what `safe_open` said of each. Before, offsets that overlapped or contradicted the shape
 * were read as a complete checkpoint with its parameters counted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { inspectFiles, inspectFilesAsync, inspectCompleteness, totals, readSafetensorsHeader, Pieces, InspectError } from '../../src/core/inspect';
import { RemoteRunsError } from '../../src/core/types';
import { manyTensorsSafetensors } from '../harness/safetensorsFiles';
import { inspectionText } from '../../src/cli/inspect';

const DIR = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'refused');
const expected = JSON.parse(fs.readFileSync(path.join(DIR, 'expected.json'), 'utf8')) as Record<string, { opens: boolean; error?: string; tensors?: number; params?: number }>;

/** A fixture as inspect reads a checkpoint: a file by its own name, a folder (DCP) by its files' names. */
function inspect(name: string) {
  const p = path.join(DIR, name);
  const files = fs.statSync(p).isDirectory() ? fs.readdirSync(p).map((f) => [f, path.join(p, f)]) : [[name, p]];
  return inspectFiles(
    files.map(([n, f]) => {
      const bytes = fs.readFileSync(f);
      return { name: n, size: bytes.length, pieces: Pieces.whole(bytes) };
    }),
  ).inspection;
}

/**
 * What the library said, without its prefix: safe_open's without the JSON error's list of dtypes, torch.load's
 * without its arithmetic (`(64 bytes = 64 elements * 1 bytes/element) for dtype Byte`: torch's untyped storage).
 */
function libraryWords(error: string): string {
  return error
    .replace(/^SafetensorError: Error while deserializing header: /, '')
    .replace(/, expected one of .*$/, '')
    .replace(/^RuntimeError: /, '')
    .replace(/^CheckpointException: \['(\w+)'\]$/, '$1')
    .replace(/ = \d+ elements .*$/, '');
}

for (const name of ['valid.safetensors', 'torch_valid.pt', 'dcp_valid']) {
  test(`${name}: the valid file the library wrote is read whole`, () => {
    const ins = inspect(name);
    const e = expected[name];
    assert.equal(e.opens, true);
    assert.equal(ins.tensors.length, e.tensors);
    assert.equal(totals(ins).params, e.params);
    assert.equal(inspectCompleteness(ins).state, 'complete');
  });
}

for (const [name, e] of Object.entries(expected)) {
  if (name.startsWith('_') || e.opens) continue;
  test(`${name}: refused as the library refuses it (${libraryWords(e.error!)})`, () => {
    const ins = inspect(name);
    const c = inspectCompleteness(ins);
    assert.notEqual(c.state, 'complete', 'never reported complete');
    const words = libraryWords(e.error!);
    if (name === 'past_end.safetensors') {
      // Shorter than its header says: what a writer still writing leaves, so incomplete (never `latest`), naming the refusal.
      assert.equal(c.state, 'incomplete');
      assert.ok(c.reasons.some((r) => r.includes(words)), `${c.reasons.join('; ')} should say ${words}`);
      return;
    }
    const problem = ins.files.find((f) => f.problem)?.problem;
    assert.ok(problem, 'the file has a problem');
    assert.equal(problem.code, 'bad-format');
    assert.ok(problem.message.includes(words), `${problem.message} should say ${words}`);
    assert.equal(ins.tensors.length, 0, 'no parameters counted from a refused header');
    assert.equal(totals(ins).params, 0);
  });
}

/** A safetensors file from a header object and a data length (padded as the library pads). */
function file(header: unknown, dataBytes: number, raw?: string): Pieces {
  let text = raw ?? JSON.stringify(header);
  text += ' '.repeat((8 - (Buffer.byteLength(text) % 8)) % 8);
  const h = Buffer.from(text);
  const b = Buffer.alloc(8 + h.length + dataBytes);
  b.writeBigUInt64LE(BigInt(h.length));
  h.copy(b, 8);
  return Pieces.whole(b);
}

test('what the library accepts is read: offsets in any order, escapes and spaces, empty tensors, null metadata', () => {
  const h = readSafetensorsHeader(
    file(undefined, 24, ' { "b\\u00e9\\"q" : {"dtype":"F32","shape":[2],"data_offsets":[16,24]} ,\n"a":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}, "z":{"dtype":"U8","shape":[0],"data_offsets":[24,24]}, "__metadata__": null }'),
  );
  assert.deepEqual(h.tensors.map((t) => [t.name, t.dtype, t.numel, t.bytes]), [['bé"q', 'float32', 2, 8], ['a', 'int64', 2, 16], ['z', 'uint8', 0, 0]]);
  assert.equal(h.metadata, undefined);
  assert.equal(h.expectedSize, h.dataStart + 24);
  assert.equal(readSafetensorsHeader(file({}, 0)).tensors.length, 0);
  // Sub-byte dtypes count bits (safetensors Dtype::bitsize): 4 F4 values are 2 bytes.
  assert.equal(readSafetensorsHeader(file({ q: { dtype: 'F4', shape: [4], data_offsets: [0, 2] } }, 2)).tensors[0].bytes, 2);
});

test('hostile headers end in an InspectError that says why, never another exception', () => {
  const cases: [Pieces, RegExp][] = [
    [file(undefined, 0, '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'), /never ends|not JSON/],
    [file(undefined, 4, '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}} x'), /more after its end/],
    [file(undefined, 4, '{"a" {"dtype":"F32"}}'), /colon/],
    [file(undefined, 4, '[1,2]'), /not a JSON object/],
    [file({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, __metadata__: { n: 1 } }, 4), /__metadata__/],
    [file({ a: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, 8), /invalid offset for tensor `a`.*4 bytes no tensor covers/],
    [file({ a: { dtype: 'F6_E2M3', shape: [3], data_offsets: [0, 2] } }, 2), /misaligned/],
  ];
  for (const [src, why] of cases) {
    assert.throws(() => readSafetensorsHeader(src), (e: unknown) => e instanceof InspectError && why.test(e.message), String(why));
  }
  const bad = Buffer.concat([file({}, 0).range(0, 8, 'len'), Buffer.from([0x7b, 0xff, 0xfe, 0x7d, 0x20, 0x20, 0x20, 0x20])]);
  bad.writeBigUInt64LE(8n);
  assert.throws(() => readSafetensorsHeader(Pieces.whole(bad)), /not UTF-8/);
});

test('a header of 200 000 tensors is read (no stack overflow), and a signal ends the stepped read with cancelled', async () => {
  const b = manyTensorsSafetensors(200_000);
  const files = [{ name: 'model.safetensors', size: b.length, pieces: Pieces.whole(b) }];
  const { inspection } = await inspectFilesAsync(files);
  assert.equal(inspection.tensors.length, 200_000);
  assert.equal(totals(inspection).params, 200_000);
  assert.equal(inspectCompleteness(inspection).state, 'complete');
  // The read yields to the event loop as it goes: an abort from a timer lands in the middle of it.
  const controller = new AbortController();
  setImmediate(() => controller.abort());
  await assert.rejects(inspectFilesAsync(files, {}, controller.signal), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'cancelled');
});

test('the text output of a header with one name of a megabyte stays the size of its input (no line padded to it)', () => {
  const long = 'x'.repeat(1_000_000);
  const header = { [long]: { dtype: 'U8', shape: [1], data_offsets: [0, 1] } } as Record<string, unknown>;
  for (let i = 0; i < 1000; i++) header[`model.layers.${i}.w`] = { dtype: 'U8', shape: [1], data_offsets: [i + 1, i + 2] };
  const src = file(header, 1001);
  const ins = inspectFiles([{ name: 'model.safetensors', size: src.size, pieces: src }]).inspection;
  assert.equal(ins.tensors.length, 1001);
  const text = inspectionText({ address: 'h/host/r/step_1', checkpoint: { name: 'step_1' } as never, result: { inspection: ins, commands: 1, bytesRead: src.size } });
  assert.ok(text.length < 3_000_000, `${text.length} characters`);
});
