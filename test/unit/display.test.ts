/**
 * The one display function (src/shared/display.ts), by property: for any string, what is shown holds no C0/C1
 * control, DEL, bidi control or lone surrogate; two different names are never shown alike (the shown form reads back
 * to the name); and `ls` of runs with hostile names, listed by the real listing script on this machine's sh, has
 * exactly one row per run.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import fc from 'fast-check';
import { LogLineEnds, displayName, displayText } from '../../src/shared/display';
import { RemoteRunsCore } from '../../src/core/service';
import { LocalExecutor } from '../../src/core/eval/localExecutor';
import { lsCommand } from '../../src/cli/ls';
import { displayStream, rawStream } from '../../src/cli/output';
import { PassThrough } from 'node:stream';
import { checkpointLocalRoot } from '../../src/core/transfer/plan';
import { parseAddress } from '../../src/core/address';

/** What must never reach a terminal raw, written out here independently of the code under test. */
function unsafeAt(s: string, keep = ''): number {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (keep.includes(s[i])) continue;
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f)) return i;
    if (c === 0x061c || c === 0x200e || c === 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069)) return i;
    if (c >= 0xd800 && c <= 0xdbff) {
      if (i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        i++;
        continue;
      }
      return i;
    }
    if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

/** The inverse of displayName, written from its documented form: proof that no two names are shown alike. */
function readBack(shown: string): string {
  return shown.replace(/\\(\\|x([0-9a-f]{2})|u([0-9a-f]{4}))|\\/g, (m, _e, x?: string, u?: string) => {
    if (m === '\\') throw new Error(`a lone backslash in ${JSON.stringify(shown)}`);
    if (m === '\\\\') return '\\';
    if (x !== undefined) {
      const b = parseInt(x, 16);
      return String.fromCharCode(b < 0x80 ? b : 0xdc00 + b);
    }
    return String.fromCharCode(parseInt(u!, 16));
  });
}

/** Strings rich in what matters: controls, bidi, lone surrogates, backslashes and text that looks like an escape. */
const hostile = fc.string({
  unit: fc.oneof(
    fc.constantFrom('\x1b', '\n', '\r', '\t', '\0', '\x7f', '\x85', '\x9b', '\u202e', '\u2066', '\u200f', '\u061c', '\\', 'x', 'u', '1', 'b', 'f', 'd', '[', ']', ';', '\ud83d\ude00', '\udcff', '\ud800', 'é'),
    fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  ),
  maxLength: 40,
});

test('displayName: for any string, no control, DEL, bidi control or lone surrogate is shown', () => {
  fc.assert(
    fc.property(hostile, (s) => {
      const shown = displayName(s);
      assert.equal(unsafeAt(shown), -1, `${JSON.stringify(shown)} holds an unsafe character`);
    }),
    { numRuns: 5000 },
  );
});

test('displayName is injective: the shown form reads back to exactly the name, so two names never show alike', () => {
  fc.assert(
    fc.property(hostile, (s) => assert.equal(readBack(displayName(s)), s)),
    { numRuns: 5000 },
  );
  fc.assert(
    fc.property(hostile, hostile, (a, b) => {
      fc.pre(a !== b);
      assert.notEqual(displayName(a), displayName(b));
    }),
    { numRuns: 5000 },
  );
});

test('displayName: the look-alikes stay apart (a literal "\\x1b" and ESC, a literal "\\xff" and the byte 0xFF of a name that is not UTF-8)', () => {
  assert.equal(displayName('a\x1b[2Jb'), 'a\\x1b[2Jb');
  assert.equal(displayName('a\\x1b[2Jb'), 'a\\\\x1b[2Jb');
  // A byte that is not UTF-8 arrives as a lone surrogate U+DC80–U+DCFF (surrogateescape, PEP 383).
  assert.equal(displayName('badutf8\udcff\udcfe'), 'badutf8\\xff\\xfe');
  assert.equal(displayName('badutf8\\xff\\xfe'), 'badutf8\\\\xff\\\\xfe');
  assert.equal(displayName('evil\u202egnp.exe'), 'evil\\u202egnp.exe');
  assert.equal(displayName('\x1b]52;c;ZWNobyBwd25lZA==\x07'), '\\x1b]52;c;ZWNobyBwd25lZA==\\x07');
  assert.equal(displayName('a\u009b31m'), 'a\\u009b31m');
  // Printable text of any script and emoji pairs are shown as they are.
  assert.equal(displayName('résumé/第一步/😀'), 'résumé/第一步/😀');
});

test('displayText: for any text, only the newline and the tab it lays out with remain; backslashes are not doubled', () => {
  fc.assert(
    fc.property(hostile, (s) => {
      const shown = displayText(s);
      assert.equal(unsafeAt(shown, '\n\t'), -1, `${JSON.stringify(shown)} holds an unsafe character`);
      assert.equal(shown.split('\n').length, s.split('\n').length);
    }),
    { numRuns: 5000 },
  );
  // Text already shown through displayName is left as it is (no escape doubled).
  fc.assert(fc.property(hostile, (s) => assert.equal(displayText(displayName(s)), displayName(s))), { numRuns: 2000 });
});

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'display-ls-'));
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

test('ls of runs with hostile names (newline, CR, tab, ESC, OSC 52, U+202E), listed by the real listing script: one row per run, no control', { timeout: 120_000 }, async () => {
  // A name is a folder name: no NUL, no "/", not "." or "..".
  const folderName = hostile.map((s) => s.replace(/[\0/]/g, '_').replace(/[\ud800-\udfff]/g, '_')).filter((s) => s.length > 0 && s !== '.' && s !== '..' && Buffer.byteLength(s) < 200);
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(folderName, { minLength: 1, maxLength: 6 }), async (names) => {
      const root = path.join(tmp, `r${round++}`);
      for (const n of names) {
        fs.mkdirSync(path.join(root, n, 'checkpoints', 'step_10'), { recursive: true });
        fs.writeFileSync(path.join(root, n, 'checkpoints', 'step_10', 'model.safetensors'), 'x');
      }
      const core = new RemoteRunsCore({ hosts: () => [{ name: 'here', host: 'localhost', runRoots: [root], targets: ['host'] }], executorFor: () => new LocalExecutor() });
      const out = await lsCommand(core, parseAddress('here/host'));
      const rows = out.text.split('\n').slice(0, -1);
      assert.equal(rows.length, names.length, out.text);
      assert.equal(unsafeAt(out.text, '\n\t'), -1);
      // Each row's first column reads back to one of the names, each name once.
      assert.deepEqual(rows.map((r) => readBack(r.split('\t')[0])).sort(), names.map((n) => n).sort());
    }),
    { numRuns: 25 },
  );
});

test('displayStream, the CLI writer: every write shown (strings and bytes split inside a character), the raw stream under it for the program\'s own controls', async () => {
  const under = new PassThrough();
  let got = '';
  under.on('data', (d: Buffer) => (got += d.toString('utf8')));
  const out = displayStream(under);
  out.write('run \x1b]52;c;cHduZWQ=\x07 a\rb\u202e\n');
  // U+202E is E2 80 AE: split between two chunks, it is still one character, escaped once.
  const rlo = Buffer.from('x\u202ey');
  out.write(rlo.subarray(0, 2));
  out.write(rlo.subarray(2));
  rawStream(out).write('\r\x1b[K');
  let drained = false;
  out.once('drain', () => (drained = true));
  under.emit('drain');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(got, 'run \\x1b]52;c;cHduZWQ=\\x07 a\\x0db\\u202e\nx\\u202ey\r\x1b[K');
  assert.equal(drained, true, 'events are the stream\'s own');
  assert.equal(rawStream(under), under);
});

test('ls: a folder whose name holds the bytes 0xFF 0xFE and one literally named "badutf8\\xff\\xfe" are two runs, shown differently; --json keeps the bytes as surrogateescape', async () => {
  const root = path.join(tmp, 'bytes');
  const byteName = Buffer.concat([Buffer.from('badutf8'), Buffer.from([0xff, 0xfe])]);
  for (const dir of [Buffer.concat([Buffer.from(`${root}/`), byteName]), Buffer.from(`${root}/badutf8\\xff\\xfe`)]) {
    fs.mkdirSync(Buffer.concat([dir, Buffer.from('/checkpoints/step_10')]), { recursive: true });
    fs.writeFileSync(Buffer.concat([dir, Buffer.from('/checkpoints/step_10/model.safetensors')]), 'x');
  }
  const core = new RemoteRunsCore({ hosts: () => [{ name: 'here', host: 'localhost', runRoots: [root], targets: ['host'] }], executorFor: () => new LocalExecutor() });
  const out = await lsCommand(core, parseAddress('here/host'));
  assert.deepEqual(out.text.split('\n').slice(0, -1).map((r) => r.split('\t')[0]).sort(), ['badutf8\\\\xff\\\\xfe', 'badutf8\\xff\\xfe']);
  const names = (out.json as { runs: { name: string }[] }).runs.map((r) => r.name).sort();
  assert.deepEqual(names, ['badutf8\\xff\\xfe', 'badutf8\udcff\udcfe']);
});

test('a run or checkpoint name holding bytes that are not UTF-8 keeps them as a local folder (never U+FFFD, shared by two names)', () => {
  assert.equal(checkpointLocalRoot(tmp, 'badutf8\udcff', { name: 'ck\udcfe' }), path.join(tmp, 'badutf8\udcff', 'ck\udcfe'));
  // An emoji (a well-formed surrogate pair) is a name like any other.
  assert.equal(checkpointLocalRoot(tmp, 'run\ud83d\ude00', { name: 'step_1' }), path.join(tmp, 'run\ud83d\ude00', 'step_1'));
});

test('a log stream: CRLF and a progress bar\'s bare CR are line ends, however the stream is cut into chunks', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom('a', 'b', '\r', '\n', '\r\n', '100%|███|', '\x1b[2K'), { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 6 }), (parts, cuts) => {
      const text = parts.join('');
      const at = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
      const ends = new LogLineEnds();
      let out = '';
      let from = 0;
      for (const c of [...at, text.length]) {
        out += ends.push(text.slice(from, c));
        from = c;
      }
      out += ends.end();
      assert.equal(out, text.replace(/\r\n?/g, '\n'));
      assert.ok(!out.includes('\r'));
    }),
  );
  // tqdm's redraws, as a terminal is shown them after displayText: one line per redraw, no CR, the ESC escaped.
  const ends = new LogLineEnds();
  const shown = displayText(ends.push('eval:  50%|█    |\r') + ends.push('\x1b[Aeval: 100%|██|\r\n') + ends.end());
  assert.equal(shown, 'eval:  50%|█    |\n\\x1b[Aeval: 100%|██|\n');
});
