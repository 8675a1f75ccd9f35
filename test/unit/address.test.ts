import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { formatAddress, parseAddress } from '../../src/core/address';
import { RemoteRunsError } from '../../src/core/types';

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
