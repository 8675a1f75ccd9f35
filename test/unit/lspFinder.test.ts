/** The language server's path finder and glob matcher: pure text in, references out. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findFallbacks, findPathRefs, findPlaceComment } from '../../src/lsp/finder';
import { matchRel, matchSegment, splitGlob } from '../../src/lsp/glob';

const roots = ['/workspace', '~/runs', '~/checkpoints'];
const paths = (text: string): string[] => findPathRefs(text, { roots }).map((r) => r.path);

test("the story's command: the glob, its container from `pct exec`, its host from `ssh`, and the fallback", () => {
  const text = `ssh -o ConnectTimeout=10 root@10.1.2.6 'pct exec 200 -- ls -la /workspace/checkpoints/*.pt 2>/dev/null || echo "no checkpoints"' 2>&1\n`;
  const refs = findPathRefs(text, { roots });
  assert.equal(refs.length, 1, JSON.stringify(refs));
  const [ref] = refs;
  assert.equal(ref.path, '/workspace/checkpoints/*.pt');
  assert.equal(text.slice(ref.start, ref.end), ref.path);
  assert.equal(ref.glob, true);
  assert.equal(ref.host, '10.1.2.6');
  assert.equal(ref.user, 'root');
  assert.equal(ref.target, 'pct:200');
  assert.ok(ref.fallback);
  assert.equal(ref.fallback.says, 'no checkpoints');
  assert.equal(ref.fallback.text, '2>/dev/null || echo "no checkpoints"');
  assert.equal(text.slice(ref.fallback.start, ref.fallback.end), ref.fallback.text);
});

test('the plain command: a bare glob under a run root, no host or target', () => {
  const text = 'ls /workspace/checkpoints/*.pt 2>/dev/null || echo "no checkpoints"';
  const [ref, ...rest] = findPathRefs(text, { roots });
  assert.equal(rest.length, 0);
  assert.equal(ref.path, '/workspace/checkpoints/*.pt');
  assert.equal(ref.host, undefined);
  assert.equal(ref.target, undefined);
  assert.equal(ref.fallback?.says, 'no checkpoints');
});

test('redirections, URLs, variables, f-strings and kernel paths are not references', () => {
  assert.deepEqual(paths('ls /workspace 2>/dev/null >/workspace/out.txt'), ['/workspace']);
  assert.deepEqual(paths('curl https://example.invalid/workspace/x'), []);
  assert.deepEqual(paths('ls $ROOT/workspace/x ${ROOT}/workspace'), []);
  assert.deepEqual(paths('p = f"/workspace/{run}/ckpt"'), []);
  assert.deepEqual(paths("ssh box 'cat /proc/cpuinfo; ls /dev/null'"), []);
  assert.deepEqual(paths('ls ./workspace/x /usr/bin/python'), [], 'relative paths and paths outside roots');
});

test('Python, YAML, JSON, TOML and Markdown spellings', () => {
  assert.deepEqual(paths('model.load("/workspace/checkpoints/step_20000/checkpoint.pt")'), ['/workspace/checkpoints/step_20000/checkpoint.pt']);
  assert.deepEqual(paths('ckpt: /workspace/checkpoints/step_20000\nout: ~/runs/exp1/'), ['/workspace/checkpoints/step_20000', '~/runs/exp1/']);
  assert.deepEqual(paths('{"resume": "/workspace/checkpoints/step_2", "x": ["/workspace/a"]}'), ['/workspace/checkpoints/step_2', '/workspace/a']);
  assert.deepEqual(paths("resume = '/workspace/ckpt'"), ['/workspace/ckpt']);
  assert.deepEqual(paths('See `/workspace/checkpoints/step_10000`. Or /workspace/logs.'), ['/workspace/checkpoints/step_10000', '/workspace/logs']);
  assert.deepEqual(paths('python train.py --resume=/workspace/checkpoints/step_4'), ['/workspace/checkpoints/step_4']);
  assert.deepEqual(paths('!ls /workspace/checkpoints/step_[0-9]*'), ['/workspace/checkpoints/step_[0-9]*']);
});

test('scp style host:path takes the host from the text, wherever the path is', () => {
  const [a, b] = findPathRefs('scp kpro6:/data/ckpt/model.pt root@gpu2:/tmp/x .', { roots });
  assert.deepEqual([a.host, a.path, a.user], ['kpro6', '/data/ckpt/model.pt', undefined]);
  assert.deepEqual([b.host, b.path, b.user], ['gpu2', '/tmp/x', 'root']);
});

test('docker exec with options, ssh with options, and subprocess argument lists', () => {
  const [d] = findPathRefs('docker exec -it -u root trainer ls /opt/run/ckpt', { roots });
  assert.deepEqual([d.target, d.path, d.host], ['docker:trainer', '/opt/run/ckpt', undefined]);
  const [s] = findPathRefs('ssh -p 2222 -i ~/.ssh/id kpro6 ls /data/x', { roots });
  assert.deepEqual([s.host, s.path], ['kpro6', '/data/x']);
  const [p] = findPathRefs('subprocess.run(["ssh", "kpro6", "pct", "exec", "200", "--", "ls", "/workspace/ckpt"])', { roots });
  assert.deepEqual([p.host, p.target, p.path], ['kpro6', 'pct:200', '/workspace/ckpt']);
});

test('a context applies from its command on, and a continued line carries it', () => {
  const text = 'ls /workspace/a; ssh box \\\n  ls /workspace/b\nls /workspace/c';
  const refs = findPathRefs(text, { roots });
  assert.deepEqual(refs.map((r) => [r.path, r.host]), [['/workspace/a', undefined], ['/workspace/b', 'box'], ['/workspace/c', undefined]]);
});

test('fallbacks: echo, printf, true and :, but not a fallback of another command', () => {
  assert.deepEqual(findFallbacks('ls x 2>/dev/null || echo none; ls y 2>/dev/null || true\nls z &>/dev/null || :').map((f) => f.says), ['none', 'true', ':']);
  assert.deepEqual(findFallbacks('ls x 2>/dev/null; ls y || echo other'), []);
  assert.deepEqual(findFallbacks('ls x || echo visible errors'), [], 'without 2>/dev/null the error is still shown');
  assert.equal(findFallbacks("ls x 2>/dev/null || printf 'no %s\\n' files")[0].says, 'no %s\\n files');
});

test('the remote-runs comment names host and target', () => {
  assert.deepEqual(findPlaceComment('#!/bin/sh\n# remote-runs: kpro6/pct:200\nls /workspace'), { host: 'kpro6', target: 'pct:200' });
  assert.deepEqual(findPlaceComment('# remote-runs: kpro6'), { host: 'kpro6', target: 'host' });
  assert.deepEqual(findPlaceComment('// remote-runs: gpu/docker:trainer'), { host: 'gpu', target: 'docker:trainer' });
  assert.equal(findPlaceComment('ls /workspace'), undefined);
});

test('globs: the static folder, segment matching, hidden names', () => {
  assert.deepEqual(splitGlob('/workspace/checkpoints/*.pt'), { dir: '/workspace/checkpoints', segments: ['*.pt'] });
  assert.deepEqual(splitGlob('/workspace/*/step_?/model.pt'), { dir: '/workspace', segments: ['*', 'step_?', 'model.pt'] });
  assert.ok(matchSegment('*.pt', 'checkpoint.pt'));
  assert.ok(!matchSegment('*.pt', 'step_10000'));
  assert.ok(!matchSegment('*', '.hidden'));
  assert.ok(matchSegment('step_[0-9]*', 'step_100'));
  assert.ok(!matchSegment('step_[!0-9]*', 'step_100'));
  assert.ok(matchSegment('a.b', 'a.b') && !matchSegment('a.b', 'axb'), 'a dot is literal');
  assert.ok(matchRel(['*', 'checkpoint.pt'], 'step_10000/checkpoint.pt'));
  assert.ok(!matchRel(['*.pt'], 'step_10000/checkpoint.pt'));
});
