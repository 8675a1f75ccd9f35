/**
 * The pod download source's streams (transfer/podSource.ts): each is the argv PodExecutor.argsFor builds (the one
 * wrapping of a pod's command line, so a change there reaches the byte streams), started with the configured kubectl
 * program, held by the streams' lifeline while it runs, and close() kills what still runs and waits for it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { podTransferSource } from '../../src/core/transfer/podSource';
import { PodExecutor } from '../../src/core/kube/executor';
import type { KubectlAccess } from '../../src/core/kube/kubectl';

function fakeKubectl(body: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-podsource-'));
  const file = path.join(dir, 'kubectl');
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

function exited(child: import('node:child_process').ChildProcess): Promise<{ out: string; code: number | null; signal: NodeJS.Signals | null }> {
  let out = '';
  child.stdout?.on('data', (b: Buffer) => (out += b));
  return new Promise((resolve) => child.once('close', (code, signal) => resolve({ out, code, signal })));
}

test('a stream runs the configured kubectl with exactly PodExecutor.argsFor(line)', async () => {
  // NUL after each argument: the lifeline's script (kube/lifeline.ts) holds newlines.
  const kubectl = fakeKubectl(`for a in "$@"; do printf '%s\\0' "$a"; done`);
  const access: KubectlAccess = { cluster: { kind: 'kubernetes', name: 'prod', context: 'ctx', kubeconfig: '/k/config' }, kubectl };
  const pod = { namespace: 'ml-team', pod: 'bert-master-0', container: 'pytorch' };
  const src = podTransferSource('prod', access, pod);
  assert.deepEqual(src.target, { kind: 'pod', id: 'ml-team/bert-master-0:pytorch' });
  const streams = src.openStreams();
  const line = "dd if='/workspace/a b' bs=1M skip=2 count=1";
  const { out, code } = await exited(streams.run(line));
  assert.equal(code, 0);
  assert.deepEqual(out.split('\0').slice(0, -1), new PodExecutor(access, pod).argsFor(line));
  await streams.close();
  assert.throws(() => streams.run('true'), /closed/);
});

test('close() kills a stream still running (its whole group) and resolves once it has exited', async () => {
  const kubectl = fakeKubectl('sleep 30');
  const src = podTransferSource('prod', { cluster: { kind: 'kubernetes', name: 'prod', context: 'ctx' }, kubectl }, 'ml-team/p:c');
  const streams = src.openStreams();
  assert.ok(streams.lifelinePid, 'a lifeline holds the streams');
  const child = streams.run('cat /workspace/x');
  const end = exited(child);
  const t0 = Date.now();
  await streams.close();
  assert.ok(child.exitCode !== null || child.signalCode !== null, 'exited when close() resolved');
  assert.equal((await end).signal, 'SIGKILL');
  assert.ok(Date.now() - t0 < 5000);
});
