import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatAddress, parseAddress } from '../../src/core/address';
import { RemoteRunsError, type Run } from '../../src/core/types';
import { enclosingRun } from '../../src/core/service';

function rejects(s: string, re: RegExp): void {
  assert.throws(
    () => parseAddress(s),
    (e: unknown) => {
      assert.ok(e instanceof RemoteRunsError, String(e));
      assert.equal(e.kind, 'bad-address');
      assert.match(e.message, re);
      assert.match(e.message, /Expected host\[\/target\[\/run\[\/checkpoint\]\]\]/, 'every error shows the accepted forms');
      assert.equal(e.detail.address, s);
      return true;
    },
  );
}

describe('parseAddress', () => {
  test('host only', () => {
    assert.deepEqual(parseAddress('gpu1'), { host: 'gpu1' });
  });

  test('host/target for each target kind', () => {
    assert.deepEqual(parseAddress('gpu1/host'), { host: 'gpu1', target: { kind: 'host', id: '' } });
    assert.deepEqual(parseAddress('gpu1/pct:200'), { host: 'gpu1', target: { kind: 'pct', id: '200' } });
    assert.deepEqual(parseAddress('gpu1/docker:trainer-1'), { host: 'gpu1', target: { kind: 'docker', id: 'trainer-1' } });
  });

  test('host/target/run and host/target/run/checkpoint', () => {
    assert.deepEqual(parseAddress('gpu1/pct:200/llama-7b'), { host: 'gpu1', target: { kind: 'pct', id: '200' }, run: 'llama-7b', segments: ['llama-7b'] });
    assert.deepEqual(parseAddress('gpu1/pct:200/llama-7b/step_1000'), {
      host: 'gpu1',
      target: { kind: 'pct', id: '200' },
      run: 'llama-7b',
      checkpoint: 'step_1000',
      segments: ['llama-7b', 'step_1000'],
    });
  });

  test('a run named by a path: every part after the target is kept, to be matched against the listing', () => {
    const a = parseAddress('gpu1/host/expA/seed1/latest');
    assert.deepEqual(a.segments, ['expA', 'seed1', 'latest']);
    assert.equal(formatAddress(a), 'gpu1/host/expA/seed1/latest');
  });

  test('run and checkpoint names may hold anything but "/"', () => {
    const run = `my run 'v2' "x" $(rm -rf ~) \`id\`; a && b\n\ttab * ? ~ -dash ünï 日本 :colon @at`;
    const a = parseAddress(`h/docker:c/${run}/model_step_5.pt`);
    assert.equal(a.run, run);
    assert.equal(a.checkpoint, 'model_step_5.pt');
  });

  test('one trailing slash is allowed', () => {
    assert.deepEqual(parseAddress('gpu1/'), { host: 'gpu1' });
    assert.deepEqual(parseAddress('gpu1/host/run/'), { host: 'gpu1', target: { kind: 'host', id: '' }, run: 'run', segments: ['run'] });
  });

  test('errors say what is wrong', () => {
    rejects('', /it is empty/);
    rejects('/', /it is empty/);
    rejects('/pct:200', /the host part is empty/);
    rejects('gpu1//run', /the target part is empty/);
    rejects('gpu1/host//ckpt', /the run or checkpoint part is empty/);
    rejects('gpu1//', /the target part is empty/);
    rejects('gpu1/lxc:200', /Not a target: "lxc:200"/);
    rejects('gpu1/pct:abc', /Proxmox container id is a number/);
    rejects('gpu1/200', /did you mean pct:200\?/);
    rejects('gpu1/docker:', /Not a target/);
    rejects('gpu1/host/../etc', /"\.\." is not a run or checkpoint name/);
    rejects('gpu1/host/run/.', /"\." is not a run or checkpoint name/);
    rejects('gpu1/host/a/../b/c', /"\.\." is not a run or checkpoint name/);
    rejects('gpu1/host/a\0b', /NUL/);
  });
});

describe('formatAddress', () => {
  test('is the inverse of parseAddress', () => {
    for (const s of ['gpu1', 'gpu1/host', 'gpu1/pct:200', 'g/docker:c/run x', 'g/pct:1/r/step_10']) {
      assert.equal(formatAddress(parseAddress(s)), s);
    }
  });

  test('round-trips arbitrary names without "/" (property)', () => {
    const part = fc.string({ minLength: 1, unit: 'binary' }).filter((s) => !s.includes('/') && !s.includes('\0') && s !== '.' && s !== '..');
    const target = fc.oneof(
      fc.constant({ kind: 'host' as const, id: '' }),
      fc.nat().map((n) => ({ kind: 'pct' as const, id: String(n) })),
      part.map((id) => ({ kind: 'docker' as const, id })),
    );
    fc.assert(
      fc.property(part, target, part, part, (host, t, run, checkpoint) => {
        const a = { host, target: t, run, checkpoint };
        assert.deepEqual(parseAddress(formatAddress(a)), { ...a, segments: [run, checkpoint] });
      }),
    );
  });
});

test('an address naming a folder that is part of a run, or holds exactly one, resolves to that run with a note', () => {
  const run = (path: string, metrics: string[], checkpoints: string[] = []): Run => ({
    name: path.slice(path.lastIndexOf('/') + 1), path, metrics, checkpoints: checkpoints.map((p) => ({ name: p.slice(p.lastIndexOf('/') + 1), kind: 'step', step: 1, layout: 'hf', path: p, isDir: true, bytes: 0, mtime: 0, files: [], newest: false }) as unknown as Run['checkpoints'][number]), metricsMtime: 0, live: false,
  });
  // A Trainer's logdir, the run's name before its first save in older listings, once its output_dir is the run.
  const out = run('/w/out', ['/w/out/runs/Dec04_21-10-30_vm/events.out.tfevents.1.vm.1.0'], ['/w/out/checkpoint-10']);
  const other = run('/w/other', ['/w/other/log.jsonl']);
  const part = enclosingRun([out, other], 'Dec04_21-10-30_vm');
  assert.equal(part?.run, out);
  assert.match(part!.note, /^"Dec04_21-10-30_vm" is no longer a run of its own: it is part of the run out \(\/w\/out\); using that run$/);
  assert.equal(enclosingRun([out, other], 'out/runs/Dec04_21-10-30_vm')?.run, out, 'more of the path works too');
  // A folder holding exactly one run.
  const held = enclosingRun([run('/w/sweep/a', ['/w/sweep/a/log.jsonl']), other], 'sweep');
  assert.equal(held?.run.path, '/w/sweep/a');
  assert.match(held!.note, /holds one run, a \(\/w\/sweep\/a\)/);
  // Two runs below it, or a name no run's folders have: nothing (the caller says ambiguous or not-found).
  assert.equal(enclosingRun([run('/w/sweep/a', ['/w/sweep/a/l.jsonl']), run('/w/sweep/b', ['/w/sweep/b/l.jsonl'])], 'sweep'), undefined);
  assert.equal(enclosingRun([out, other], 'nothing'), undefined);
  assert.equal(enclosingRun([out], 'runs/Dec04'), undefined, 'a folder name is matched whole, never a prefix');
});
