/**
 * Remote names are bytes (issue 35, items 2 and 8), by property: any byte string decodes to a name that encodes back
 * to the same bytes; its shown form (displayName) is its address form and reads back (parseShownName, parseAddress)
 * to the same bytes; two byte strings are never shown alike; the one remote encoder (the portable command line, run
 * by this machine's /bin/sh) hands a remote command exactly those bytes; a pull's local paths (util/localFs.ts) are
 * those bytes on disk, two names two files; the walk and the read of a pull, run by /bin/sh with GNU tools and with
 * BusyBox's, find and read a file named with such bytes beside its look-alike.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { decodeName, encodeName } from '../../src/core/util/nameBytes';
import { displayName, parseShownName } from '../../src/shared/display';
import { formatAddress, parseAddress } from '../../src/core/address';
import { portableCommandLine } from '../../src/core/shell/portable';
import { shellJoin } from '../../src/core/shell/quote';
import { localFs } from '../../src/core/util/localFs';
import { localError } from '../../src/core/transfer/localErrors';
import { filePaths, lockPath } from '../../src/core/transfer/records';
import { checkpointLocalRoot, safeSegment } from '../../src/core/transfer/plan';
import { RemoteRunsError } from '../../src/core/types';
import { LocalExecutor } from '../../src/core/eval/localExecutor';
import { runCommand } from '../../src/core/remote';
import { rangeArgv, statCheckpointCommand } from '../../src/core/transfer/remoteCommands';

/** Byte strings rich in what matters: bytes that are not UTF-8, pieces of UTF-8, backslashes, controls, `x`, hex digits. */
const bytes = fc
  .array(
    fc.oneof(
      fc.constantFrom(0xff, 0xfe, 0x80, 0xc3, 0xa9, 0xed, 0xa0, 0xf0, 0x9f, 0x98, 0x80, 0x5c, 0x78, 0x75, 0x66, 0x64, 0x31, 0x1b, 0x0a, 0x09, 0x7f, 0x2e, 0x27, 0x25, 0x21, 0x20),
      fc.integer({ min: 1, max: 255 }),
    ),
    { minLength: 1, maxLength: 30 },
  )
  .map((a) => Buffer.from(a));

/** A file name: no NUL, no `/`, not `.` or `..`. */
const nameBytes = bytes.map((b) => Buffer.from(b.map((c) => (c === 0x2f || c === 0 ? 0x5f : c)))).filter((b) => b.toString('latin1') !== '.' && b.toString('latin1') !== '..');

test('any byte string: decodeName then encodeName gives the same bytes (so two byte strings never decode alike)', () => {
  fc.assert(
    fc.property(bytes, (b) => assert.ok(encodeName(decodeName(b)).equals(b), b.toString('hex'))),
    { numRuns: 5000 },
  );
});

test('any byte name: shown form → parseShownName and the address as shown → parseAddress give the same bytes', () => {
  fc.assert(
    fc.property(nameBytes, nameBytes, (run, ckpt) => {
      const r = decodeName(run);
      const c = decodeName(ckpt);
      assert.ok(encodeName(parseShownName(displayName(r))).equals(run));
      const typed = formatAddress({ host: 'gpu1', target: { kind: 'host', id: '' }, segments: [r, c] });
      assert.equal(typed, `gpu1/host/${displayName(r)}/${displayName(c)}`, 'the address form is the shown form');
      const back = parseAddress(typed);
      assert.ok(encodeName(back.run!).equals(run), `${typed}: run`);
      assert.ok(encodeName(back.checkpoint!).equals(ckpt), `${typed}: checkpoint`);
    }),
    { numRuns: 5000 },
  );
});

test('two different byte names are never shown alike', () => {
  fc.assert(
    fc.property(nameBytes, nameBytes, (a, b) => {
      fc.pre(!a.equals(b));
      assert.notEqual(displayName(decodeName(a)), displayName(decodeName(b)));
    }),
    { numRuns: 5000 },
  );
});

test('the look-alikes: the bytes 0xFF 0xFE and the literal text \\xff\\xfe are two addresses, each reading back to its own name', () => {
  const bytesRun = decodeName(Buffer.from([...Buffer.from('badutf8'), 0xff, 0xfe]));
  assert.equal(displayName(bytesRun), 'badutf8\\xff\\xfe');
  assert.equal(displayName('badutf8\\xff\\xfe'), 'badutf8\\\\xff\\\\xfe');
  assert.equal(parseAddress('h/host/badutf8\\xff\\xfe/step_1').run, bytesRun);
  assert.equal(parseAddress('h/host/badutf8\\\\xff\\\\xfe/step_1').run, 'badutf8\\xff\\xfe');
  // An address without a backslash means itself, as it always did.
  assert.deepEqual(parseAddress('h/host/run x/step_1').segments, ['run x', 'step_1']);
});

test('an address whose backslash is no escape ls writes is refused, saying what to write', () => {
  const refused = (s: string, re: RegExp): void =>
    assert.throws(
      () => parseAddress(s),
      (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-address' && re.test(e.message),
    );
  refused('h/host/a\\q', /a backslash starts an escape/);
  refused('h/host/a\\', /a backslash starts an escape/);
  refused('h/host/a\\x41', /\\x41 is not how a name is shown: write A/);
  refused('h/host/a\\udcff', /write \\xff/);
  refused('h/host/a\\x2f', /write \//);
  refused('h/host/a\\x00', /NUL/);
  refused('h/host/a\\ud800', /lone surrogate/);
  refused('h/host/\\x2e', /write \./);
});

test('the one remote encoder: a portable command line run by /bin/sh hands the command exactly the name\'s bytes', () => {
  fc.assert(
    fc.property(nameBytes, (b) => {
      const name = decodeName(b);
      const line = portableCommandLine(shellJoin(['printf', '%s', name]), false);
      assert.match(line, /^[\x20-\x7e]*$/, 'the line itself is plain ASCII, whatever the name');
      const out = execFileSync('/bin/sh', ['-c', line]);
      assert.ok(out.equals(b), `sent ${out.toString('hex')} for ${b.toString('hex')}`);
    }),
    { numRuns: 200 },
  );
});

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'name-bytes-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('local paths are the name\'s bytes on disk: bad<0xFF>.bin and bad<0xFE>.bin are two files, read back by their names', async () => {
  const ff = decodeName(Buffer.from([...Buffer.from('bad'), 0xff, ...Buffer.from('.bin')]));
  const fe = decodeName(Buffer.from([...Buffer.from('bad'), 0xfe, ...Buffer.from('.bin')]));
  const dir = checkpointLocalRoot(tmp, decodeName(Buffer.from([...Buffer.from('run'), 0xff])), { name: 'step_1' });
  await localFs.mkdir(dir, { recursive: true });
  await localFs.writeFile(path.join(dir, ff), 'ff');
  await localFs.writeFile(path.join(dir, fe), 'fe');
  const onDisk = fs.readdirSync(Buffer.from(path.join(tmp, 'run\xff', 'step_1'), 'latin1'), { encoding: 'buffer' }).map((n) => n.toString('hex')).sort();
  assert.deepEqual(onDisk, [encodeName(fe).toString('hex'), encodeName(ff).toString('hex')].sort());
  assert.deepEqual((await localFs.readdir(dir, { withFileTypes: true })).map((d) => d.name).sort(), [fe, ff].sort());
  assert.equal(await localFs.readFile(path.join(dir, ff), 'utf8'), 'ff');
  await localFs.symlink(ff, path.join(dir, 'link'));
  assert.equal(await localFs.readlink(path.join(dir, 'link')), ff, 'a link\'s text keeps its bytes too');
  // An error names the path as given (shown \xff), not Node's U+FFFD.
  const err = await localFs.stat(path.join(dir, `${ff}.missing`)).catch((e: NodeJS.ErrnoException) => e);
  assert.equal((err as NodeJS.ErrnoException).path, path.join(dir, `${ff}.missing`));
  assert.ok(!(err as Error).message.includes('\ufffd'), (err as Error).message);
});

test('a name the local file system cannot hold is refused with its name as shown, kind local-name', async () => {
  const long = `${'a'.repeat(250)}\udcff\udcfe\udcfd\udcfc\udcfb\udcfa`;
  assert.throws(
    () => safeSegment(long, 'file name'),
    (e: unknown) => e instanceof RemoteRunsError && e.kind === 'local-name' && e.message.includes('\\xff\\xfe') && /256 bytes long/.test(e.message),
  );
  // The kernel's own refusal of a name (here ENAMETOOLONG from a real mkdir; EILSEQ on a UTF-8-only file system) is
  // the same kind, naming the file.
  const p = path.join(tmp, `${'b'.repeat(300)}\udcff`);
  const real = await localFs.mkdir(p).catch((e: unknown) => e);
  const e = localError(real, 'Cannot create the folder');
  assert.equal(e.kind, 'local-name');
  assert.ok(e.message.includes('\\xff'), e.message);
  const eilseq = localError(Object.assign(new Error('EILSEQ: illegal byte sequence'), { code: 'EILSEQ', path: path.join(tmp, 'bad\udcff.bin') }), 'Cannot write');
  assert.equal(eilseq.kind, 'local-name');
  assert.match(eilseq.message, /bad\\xff\.bin: the local file system cannot hold a name in it/);
});

test('state files of a long name stay within NAME_MAX, keyed on the name\'s bytes', () => {
  const root = path.join(tmp, 'dl');
  const a = path.join(root, 'run', 'step_1', `${'n'.repeat(240)}\udcff`);
  const b = path.join(root, 'run', 'step_1', `${'n'.repeat(240)}\udcfe`);
  const pa = filePaths(root, a);
  const pb = filePaths(root, b);
  for (const p of [pa.part, `${pa.partRecord}.12345.abcdefgh.tmp`, pa.doneRecord]) assert.ok(encodeName(path.basename(p)).length <= 255, p);
  assert.notEqual(pa.part, pb.part, 'two names, two state files');
  // A short name keeps its own state name.
  assert.equal(path.basename(filePaths(root, path.join(root, 'run', 'step_1', 'bad\udcff.bin')).part), 'bad\udcff.bin.part');
  assert.ok(encodeName(path.basename(lockPath(root, path.join(root, 'run', 'c'.repeat(254))))).length <= 255);
});

test('a pull\'s walk and its reads, run by /bin/sh through the portable line with GNU tools and with BusyBox\'s: a folder and a file named with bytes that are not UTF-8 come back as those bytes, and the file is read by its name', async () => {
  const busybox = ['/usr/bin/busybox', '/bin/busybox'].find((p) => fs.existsSync(p));
  assert.ok(busybox, 'busybox is not installed: apt-get install -y busybox');
  const bbPath = path.join(tmp, 'bb-bin');
  fs.mkdirSync(bbPath, { recursive: true });
  execFileSync(busybox, ['--install', '-s', bbPath]);
  const ckptBytes = Buffer.concat([Buffer.from(path.join(tmp, 'walk')), Buffer.from([0xff, 0xfe])]);
  const fileBytes = Buffer.from([...Buffer.from('bad'), 0xff, ...Buffer.from('.bin')]);
  const lookAlike = Buffer.from('bad\\xff.bin');
  fs.mkdirSync(ckptBytes, { recursive: true });
  fs.writeFileSync(Buffer.concat([ckptBytes, Buffer.from('/'), fileBytes]), 'the byte-named file');
  fs.writeFileSync(Buffer.concat([ckptBytes, Buffer.from('/'), lookAlike]), 'its look-alike');
  const ckpt = decodeName(ckptBytes);
  for (const PATH of [process.env.PATH ?? '/usr/bin:/bin', bbPath]) {
    const exec = new LocalExecutor({ PATH });
    const walk = await runCommand(exec, { kind: 'host', id: '' }, statCheckpointCommand(ckpt));
    const names = walk.files.map((f) => encodeName(f.relative).toString('hex')).sort();
    assert.deepEqual(names, [fileBytes.toString('hex'), lookAlike.toString('hex')].sort(), `PATH=${PATH}`);
    const file = walk.files.find((f) => encodeName(f.relative).equals(fileBytes))!;
    const read = await runCommand(exec, { kind: 'host', id: '' }, { argv: rangeArgv(`${ckpt}/${file.relative}`, 0, file.bytes, file.bytes), describe: 'read', parse: (r) => r.stdout.toString() });
    assert.equal(read, 'the byte-named file', `PATH=${PATH}`);
  }
});
