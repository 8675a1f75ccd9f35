/**
 * A process killed while it writes a download record (temp file, then rename: records.ts writeJsonAtomic) leaves its
 * temp behind (issue 33: a reload mid-download left a 0-byte `….part.json.<pid>.<rand>.tmp` for good). The next
 * owner removes the temps of dead writers, and only those. The writer here is a real process, killed with SIGKILL
 * as it writes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { removeStaleTemps } from '../../src/core/transfer/records';

const RECORDS = path.join(__dirname, '..', '..', 'src', 'core', 'transfer', 'records.ts');

/**
 * A process that rewrites `file` again and again (each record padded to 8 MiB, so its temp exists for a while),
 * SIGKILLed as soon as a temp appears; tried again until one is left behind. Returns the temps left.
 */
async function killMidWrite(file: string): Promise<string[]> {
  const dir = path.dirname(file);
  for (let attempt = 0; attempt < 20; attempt++) {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '-e', `const { writeJsonAtomic } = require(${JSON.stringify(RECORDS)}); (async () => { for (let i = 0; ; i++) await writeJsonAtomic(${JSON.stringify(file)}, { i }, 8 << 20); })();`],
      { stdio: 'ignore' },
    );
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    await new Promise<void>((resolve) => {
      const watcher = fs.watch(dir, (_event, name) => {
        if (name && String(name).endsWith('.tmp')) {
          child.kill('SIGKILL');
          watcher.close();
          resolve();
        }
      });
      child.once('exit', () => {
        watcher.close();
        resolve();
      });
    });
    await exited;
    const left = fs.readdirSync(dir).filter((n) => n.endsWith('.tmp'));
    if (left.length > 0) return left;
  }
  return [];
}

test('a record writer SIGKILLed mid-write leaves a temp; the next owner removes it, and keeps a running writer\'s temp and the record', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-temps-'));
  try {
    const record = path.join(dir, 'checkpoint.pt.part.json');
    const left = await killMidWrite(record);
    assert.ok(left.length > 0, 'a killed writer left its temp (the defect the next owner repairs)');
    assert.match(left[0], /^checkpoint\.pt\.part\.json\.\d+\.[0-9a-z]+\.tmp$/);
    // A temp of a writer that still runs (this process) is not stale.
    const ours = path.join(dir, `other.json.${process.pid}.abc123.tmp`);
    fs.writeFileSync(ours, '');
    const removed = await removeStaleTemps(dir);
    assert.deepEqual(removed.map((p) => path.basename(p)).sort(), [...left].sort());
    assert.deepEqual(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), [path.basename(ours)], "only the running writer's temp is kept");
    // The record itself is whole: the rename either happened or did not.
    if (fs.existsSync(record)) assert.equal(typeof JSON.parse(fs.readFileSync(record, 'utf8')).i, 'number');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('recursive: temps of dead writers in folders under the state folder go too', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-temps-'));
  try {
    const deep = path.join(dir, 'partial', 'run', 'step_1');
    fs.mkdirSync(deep, { recursive: true });
    const left = await killMidWrite(path.join(deep, 'model.bin.part.json'));
    assert.ok(left.length > 0);
    assert.deepEqual(await removeStaleTemps(dir), [], 'not recursive unless asked');
    assert.deepEqual((await removeStaleTemps(dir, true)).map((p) => path.basename(p)).sort(), [...left].sort());
    assert.deepEqual(fs.readdirSync(deep).filter((n) => n.endsWith('.tmp')), []);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
