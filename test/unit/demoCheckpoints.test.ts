/**
 * The demo's checkpoint files (src/demo/realCheckpointBytes.ts) are the real writers' fixtures byte for byte, and the
 * module is what its generator (test/fixtures/demoCheckpoints.ts) makes of them today: a fixture regenerated without
 * the module, or a module edited by hand, fails here.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { DEMO_CHECKPOINT_SOURCES, demoCheckpointModule } from '../fixtures/demoCheckpoints';
import { realCheckpointFile } from '../../src/demo/realCheckpoints';
import { REAL_CHECKPOINT_FILES } from '../../src/demo/realCheckpointBytes';

const ROOT = path.join(__dirname, '..', '..');
const WRITTEN = path.join(ROOT, 'test', 'fixtures', 'real', 'written');

test('every demo checkpoint file is its fixture, byte for byte', () => {
  assert.deepEqual(Object.keys(REAL_CHECKPOINT_FILES).sort(), Object.keys(DEMO_CHECKPOINT_SOURCES).sort());
  for (const [name, source] of Object.entries(DEMO_CHECKPOINT_SOURCES)) {
    assert.ok(realCheckpointFile(name).equals(fs.readFileSync(path.join(WRITTEN, source))), `${name} ≠ ${source}`);
  }
});

test('the module is what the generator writes (the same names and bytes, in the same order)', () => {
  const module = fs.readFileSync(path.join(ROOT, 'src', 'demo', 'realCheckpointBytes.ts'), 'utf8');
  // gzip output can differ between zlib builds: compare what each entry decodes to, and the names' order.
  const names = (text: string): string[] => [...text.matchAll(/^ {2}'([^']+)':$/gm)].map((m) => m[1]);
  assert.deepEqual(names(module), names(demoCheckpointModule()));
});

test('an unknown name is an error that names it, not empty bytes', () => {
  assert.throws(() => realCheckpointFile('torch/missing.pt'), /no demo checkpoint file torch\/missing\.pt/);
});
