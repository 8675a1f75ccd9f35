/**
 * The inspect read script run by a local sh (GNU coreutils, and busybox as minimal containers have it), on files
 * the real writers wrote: every chunk it sends is the file's own bytes at the offset it states, the header reads are
 * exact, a sparse 3 GB file costs what is read, and hostile names and specs stay data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { readFilesCommand, parseInspectOutput, inspectRemote, InspectCache, type ReadSpec } from '../../src/core/inspect/remoteRead';
import { inspectFiles, Pieces, totals } from '../../src/core/inspect';
import { RemoteRunsError } from '../../src/core/types';

const FIX = path.join(__dirname, '..', 'fixtures', 'real', 'written', 'inspect');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-inspect-script-'));

function run(files: { path: string; spec: ReadSpec }[], shell: string[] = ['sh'], env: NodeJS.ProcessEnv = process.env) {
  const cmd = readFilesCommand(files);
  const r = spawnSync(shell[0], [...shell.slice(1), ...cmd.argv.slice(1)], { env, maxBuffer: 256 * 1024 * 1024 });
  assert.equal(r.status, 0, r.stderr.toString());
  return cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
}

function busyboxEnv(): { shell: string[]; env: NodeJS.ProcessEnv } {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bb = path.join(tmp, 'bb');
  fs.mkdirSync(bb, { recursive: true });
  for (const applet of ['sh', 'stat', 'dd', 'head', 'od', 'tr']) if (!fs.existsSync(path.join(bb, applet))) fs.symlinkSync(busybox, path.join(bb, applet));
  return { shell: [path.join(bb, 'sh')], env: { PATH: bb } };
}

function checkChunks(file: string, pieces: { offset: number; data: Uint8Array }[]): void {
  const whole = fs.readFileSync(file);
  for (const p of pieces) assert.ok(Buffer.from(p.data).equals(whole.subarray(p.offset, p.offset + p.data.length)), `${file} @${p.offset}`);
}

for (const [label, shellOf] of [['sh', () => ({ shell: ['sh'], env: process.env })], ['busybox', busyboxEnv]] as const) {
  test(`${label}: each spec reads exactly its bytes, with size and mtime`, () => {
    const { shell, env } = shellOf();
    const st = path.join(FIX, 'hf_shards', 'model-00001-of-00005.safetensors');
    const pt = path.join(FIX, 'train_state.pt');
    const idx = path.join(FIX, 'hf_shards', 'model.safetensors.index.json');
    const huge = path.join(FIX, 'huge_header.safetensors');
    const { files } = run(
      [
        { path: st, spec: { kind: 'safetensors' } },
        { path: pt, spec: { kind: 'head-tail' } },
        { path: idx, spec: { kind: 'whole' } },
        { path: huge, spec: { kind: 'safetensors' } },
        { path: pt, spec: { kind: 'ranges', ranges: [{ from: 5000, to: 6000 }, { from: 23000, to: 99999 }] } },
        { path: path.join(tmp, 'nope'), spec: { kind: 'whole' } },
        { path: tmp, spec: { kind: 'whole' } },
      ],
      shell,
      env,
    );
    assert.deepEqual(files.map((f) => f.status), ['ok', 'ok', 'ok', 'ok', 'ok', 'missing', 'notfile']);
    for (const [i, p] of [st, pt, idx, huge, pt].entries()) {
      assert.equal(files[i].size, fs.statSync(p).size);
      assert.equal(Math.floor(files[i].mtime / 1000), Math.floor(fs.statSync(p).mtimeMs / 1000));
      assert.equal(files[i].changed, undefined);
      checkChunks(p, files[i].pieces);
    }
    // safetensors: 8 bytes + exactly the header.
    const n = Number(fs.readFileSync(st).readBigUInt64LE(0));
    assert.deepEqual(files[0].pieces.map((x) => [x.offset, x.data.length]), [[0, 8 + n]]);
    // The 2^64-1 header length: only the 8 bytes.
    assert.deepEqual(files[3].pieces.map((x) => [x.offset, x.data.length]), [[0, 8]]);
    // A small archive: head and tail overlap into one read of the file.
    assert.deepEqual(files[1].pieces.map((x) => [x.offset, x.data.length]), [[0, fs.statSync(pt).size]]);
    // Ranges: aligned down to 4096, clamped at the end.
    assert.deepEqual(files[4].pieces.map((x) => [x.offset, x.data.length]), [[4096, 6000 - 4096], [20480, fs.statSync(pt).size - 20480]]);
  });

  test(`${label}: a sparse 3 GB safetensors file costs its header only`, () => {
    const { shell, env } = shellOf();
    // A header whose one tensor fills the file to 3 GB (the safetensors library refuses data the offsets leave
    // uncovered, so the hole is the tensor's data), then a hole: a whole file of which only the header is read.
    const big = path.join(tmp, 'big.safetensors');
    const total = 3 * 1024 ** 3;
    const n = 128;
    const header = Buffer.alloc(8 + n, ' ');
    header.writeBigUInt64LE(BigInt(n), 0);
    header.write(JSON.stringify({ __metadata__: { format: 'pt' }, 'lm_head.weight': { dtype: 'U8', shape: [total - 8 - n], data_offsets: [0, total - 8 - n] } }), 8);
    fs.writeFileSync(big, header);
    fs.truncateSync(big, total);
    const { files, bytes } = run([{ path: big, spec: { kind: 'safetensors' } }], shell, env);
    assert.ok(bytes < 8 + n + 200, `read ${bytes} bytes`);
    const { inspection } = inspectFiles([{ name: 'big.safetensors', size: files[0].size, pieces: new Pieces(files[0].size, files[0].pieces) }]);
    assert.equal(inspection.files[0].problem, undefined);
    assert.equal(inspection.tensors.length, 1);
    assert.ok(totals(inspection).params > 0);
    assert.deepEqual(inspection.incomplete, []);
    fs.rmSync(big);
  });
}

test('hostile names are data: a path with quotes, $() and a newline is read, nothing runs', () => {
  const dir = path.join(tmp, `a'b $(touch ${path.join(tmp, 'ran')})\nc`);
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, 'x.safetensors');
  fs.copyFileSync(path.join(FIX, 'hf_shards', 'model-00002-of-00005.safetensors'), p);
  const { files } = run([{ path: p, spec: { kind: 'safetensors' } }]);
  assert.equal(files[0].status, 'ok');
  checkChunks(p, files[0].pieces);
  assert.equal(fs.existsSync(path.join(tmp, 'ran')), false);
});

test('output that is not the protocol is a protocol error saying why', () => {
  const bad = (b: Buffer, why: RegExp): void => assert.throws(() => parseInspectOutput(b, 1), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && why.test(e.message));
  bad(Buffer.from('hello'), /no start marker/);
  bad(Buffer.from('\0@rr-inspect@1\0F\x000\0ok\x0010\x001\0C\x000\x00100\0abc'), /cut short/);
  bad(Buffer.from('\0@rr-inspect@1\0Z\0'), /0 files reported of 1/);
  bad(Buffer.from('\0@rr-inspect@1\0F\x003\0ok\x001\x001\0Z\0'), /file 3 where 0/);
});

test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** An Executor that runs the command line in a local sh, as sshd hands it to the login shell. */
const localExecutor = (counter: { n: number }) => ({
  exec: async (line: string) => {
    counter.n++;
    const r = spawnSync('sh', ['-c', line], { maxBuffer: 256 * 1024 * 1024 });
    return { stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false };
  },
});

test('inspectRemote: a pickle and central directory past the first read cost exactly one more command', async () => {
  const exp = JSON.parse(fs.readFileSync(path.join(FIX, 'expected.json'), 'utf8'))['many_tensors.pt'] as { tensors: { name: string; dtype: string; shape: number[]; role: string }[]; params: number };
  const p = path.join(FIX, 'many_tensors.pt');
  const st = fs.statSync(p);
  const counter = { n: 0 };
  const cache = new InspectCache();
  const listed = [{ name: 'many_tensors.pt', path: p, bytes: st.size, mtime: Math.round(st.mtimeMs) }];
  const r = await inspectRemote(localExecutor(counter), { kind: 'host', id: '' }, listed, { cache });
  assert.equal(r.commands, 2);
  assert.equal(counter.n, 2);
  assert.deepEqual(r.inspection.tensors.map((t) => ({ dtype: t.dtype, name: t.name, role: t.role, shape: t.shape })), exp.tensors.map((t) => ({ dtype: t.dtype, name: t.name, role: t.role, shape: t.shape })));
  assert.equal(totals(r.inspection).params, exp.params);
  assert.deepEqual(r.inspection.incomplete, []);
  // The head, the tail and the missing ranges only: less than the whole file.
  assert.ok(r.bytesRead < st.size, `${r.bytesRead} of ${st.size}`);
  // Cached: a second look costs nothing, another place does not share it.
  assert.equal((await inspectRemote(localExecutor(counter), { kind: 'host', id: '' }, listed, { cache })).commands, 0);
  assert.equal((await inspectRemote(localExecutor(counter), { kind: 'host', id: '' }, listed, { cache, host: 'other' })).commands, 2);
  // A file changed since the listing (other size) is read, not taken from the cache.
  assert.equal((await inspectRemote(localExecutor(counter), { kind: 'host', id: '' }, [{ ...listed[0], bytes: st.size + 1 }], { cache })).commands, 2);
});
