/**
 * Hostile input for every parser of remote command output (issue 8): the run listing, container discovery,
 * a checkpoint's file records, the eval listing / log read / stop report, eval result lines, and the CLI's own
 * inputs (addresses, config file). Any output, however broken or cut, ends in a typed value or RemoteRunsError,
 * and what comes back is bounded by what came in.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { listRunsCommand } from '../../src/core/discovery/listScript';
import { readListRecords } from '../../src/core/discovery/listParse';
import { parseTargetsOutput, parsePctList, parseDockerPs } from '../../src/core/discovery/targetsDiscovery';
import { parseStatRecords } from '../../src/core/transfer/remoteCommands';
import { parseEvalListing, parseReadOutput, parseStopOutput, toEvalRecords, parseEvalMeta } from '../../src/core/eval/records';
import { compileResultPattern, parseResultLine, parseResults, parseResultsFile } from '../../src/core/eval/results';
import { parseAddress } from '../../src/core/address';
import { parseConfigFile, parseHostsSetting } from '../../src/core/config';
import { RemoteRunsError, type RootListing } from '../../src/core/types';
import type { ExecResult } from '../../src/core/remote';

const RUNS = 200;

function typedOnly(what: string, fn: () => void): void {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof RemoteRunsError, `${what} threw ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`);
  }
}

const result = (stdout: Buffer, over: Partial<ExecResult> = {}): ExecResult => ({ stdout, stderr: Buffer.alloc(0), code: 0, truncated: false, ...over });

// --- the run listing -----------------------------------------------------------------------------------------

/** A path segment a remote folder can hold: anything but NUL and `/`, including `..`, markup, newlines. */
const segment = fc.oneof(
  fc.constantFrom('step_1', 'checkpoint-20', 'global_step3', 'ckpt_4', 'checkpoints', 'logs', 'metrics.jsonl', 'trainer_state.json', 'events.out.tfevents.1', 'model_step_99999999999999999999.pt', '..', '.', '<img src=x onerror=alert(1)>', '$(touch x)', 'a\nb', ' '),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }).map((s) => s.replace(/[\0/]/g, '_')),
);
const rel = fc.array(segment, { minLength: 1, maxLength: 6 }).map((p) => p.join('/'));
const field = fc.oneof(fc.string({ unit: 'binary', maxLength: 8 }).map((s) => s.replace(/\0/g, '')), fc.constantFrom('0', '-1', '1e400', 'NaN', '', '4096', '1700000000.5'));
const record = fc.oneof(
  fc.tuple(fc.constantFrom('f', 'd', 'l', 'o', 'ff', ''), fc.oneof(field, fc.nat().map(String)), fc.oneof(field, fc.constant('1750000000.1')), rel, fc.constantFrom('', 'Kstep_5', 'C1000\n', 'Xbad')).map((f) => ['E', ...f]),
  // By depth and name (GNU find's records): depths that fit, that skip a level, and junk.
  fc.tuple(fc.constantFrom('1', '1', '2', '3', '0', '9', 'x', '', '1e0'), fc.constantFrom('f', 'd', 'l', 'ff', ''), fc.oneof(field, fc.nat().map(String)), fc.oneof(field, fc.constant('1750000000.1')), fc.oneof(segment, fc.constant('a/b'), fc.constant('')), fc.constantFrom('', 'Kstep_5', 'C1000\n', 'Xbad')).map((f) => ['N', ...f]),
  fc.tuple(fc.constantFrom('0', '1', '2', 'x'), fc.constantFrom('ok', 'missing', 'notdir', 'denied', 'bogus'), fc.oneof(fc.constant('/w'), field)).map((f) => ['R', ...f]),
  fc.tuple(fc.constantFrom('0', '1', '5'), fc.oneof(field, fc.constant('2\nfind: a: Permission denied\nfind: loop'))).map((f) => ['X', ...f]),
  fc.oneof(field, fc.constant('1750000000')).map((t) => ['T', t]),
  fc.constantFrom(['Z'], ['Q'], ['']),
);

function listingSize(roots: RootListing[]): number {
  let n = 0;
  for (const r of roots) {
    if (r.state !== 'ok') {
      n += r.seen.length;
      continue;
    }
    for (const run of r.runs) n += 1 + run.metrics.length + run.checkpoints.reduce((s, c) => s + 1 + c.files.length, 0);
  }
  return n;
}

test('run listing: any record stream, cut anywhere, parses to listings or RemoteRunsError, never more items than entries', () => {
  fc.assert(
    fc.property(
      fc.boolean(),
      fc.array(record, { maxLength: 40 }),
      fc.nat(),
      fc.boolean(),
      fc.integer({ min: 1, max: 50 }),
      fc.constantFrom(0, 0, 0, 1, null),
      (goodStart, records, cutAt, truncated, maxEntries, code) => {
        const start = goodStart ? [['T', '1750000000'], ['R', '0', 'ok', '/w']] : [];
        const text = '\0@rr-list@3\0' + [...start, ...records].map((r) => r.map((f) => `${f}\0`).join('')).join('');
        const full = Buffer.from(text, 'utf8');
        const stdout = truncated ? full.subarray(0, cutAt % (full.length + 1)) : full;
        const entries = records.filter((r) => r[0] === 'E' || r[0] === 'N').length;
        typedOnly('parseListOutput', () => {
          const out = listRunsCommand(['/w', '~/runs'], { maxEntries }).parse(result(stdout, { truncated, code }));
          assert.ok(listingSize(out.roots) <= 2 * Math.min(entries, maxEntries) + 10, `${listingSize(out.roots)} items from ${entries} entries`);
          for (const r of out.roots) {
            if (r.state === 'ok') for (const run of r.runs) for (const c of run.checkpoints) assert.ok(Number.isFinite(c.step) && c.bytes >= 0, `checkpoint ${c.name}: step ${c.step}, ${c.bytes} bytes`);
          }
        });
      },
    ),
    { numRuns: RUNS * 2 },
  );
});

test('run listing read as it arrives, in chunks cut anywhere (inside the marker, a field, a character), is what parse reads', () => {
  const bytes = fc.oneof(fc.constant(Buffer.from('noise\n')), fc.constant(Buffer.alloc(0)), fc.uint8Array({ maxLength: 6 }).map((a) => Buffer.from(a)));
  fc.assert(
    fc.property(
      bytes,
      fc.array(record, { maxLength: 30 }),
      fc.array(fc.nat(), { maxLength: 12 }),
      fc.boolean(),
      fc.nat(),
      (noise, records, cuts, truncated, cutAt) => {
        const start = [['T', '1750000000'], ['R', '0', 'ok', '/w']];
        const body = [...start, ...records, ['X', '0', '0'], ['Z']].map((r) => r.map((f) => `${f}\0`).join('')).join('');
        // Names that are not UTF-8 too: a lone continuation byte and a sequence cut short.
        const full = Buffer.concat([noise, Buffer.from('\0@rr-list@3\0'), Buffer.from(body, 'utf8').map((b) => (b === 0x7e ? 0x80 : b))]);
        const stdout = truncated ? full.subarray(0, cutAt % (full.length + 1)) : full;
        const r = result(stdout, { truncated });
        const command = listRunsCommand(['/w'], { maxEntries: 20 });
        const outcome = (fn: () => unknown): unknown => {
          try {
            return { value: fn() };
          } catch (e) {
            assert.ok(e instanceof RemoteRunsError, String(e));
            return { error: e.kind, message: e.message };
          }
        };
        const reader = command.reader!();
        const at = [...new Set(cuts.map((c) => c % (stdout.length + 1)))].sort((a, b) => a - b);
        let from = 0;
        for (const c of [...at, stdout.length]) {
          reader.push(stdout.subarray(from, c));
          from = c;
        }
        assert.deepEqual(outcome(() => reader.finish(r)), outcome(() => command.parse(r)));
      },
    ),
    { numRuns: RUNS * 2 },
  );
});

test('run listing read as it arrives: output the executor did not stream, or streamed twice (a retried command), is read whole', () => {
  const fields = ['T', '1750000000', 'R', '0', 'ok', '/w', 'E', 'd', '4096', '1750000000.0', 'run', '', 'E', 'f', '5', '1750000000.0', 'run/step_1.pt', '', 'X', '0', '0', 'Z'];
  const text = '\0@rr-list@3\0' + fields.map((f) => `${f}\0`).join('');
  const out = Buffer.from(text);
  const command = listRunsCommand(['/w'], {});
  const expected = command.parse(result(out));
  assert.equal(expected.roots[0].state, 'ok');
  const none = command.reader!();
  assert.deepEqual(none.finish(result(out)), expected);
  const twice = command.reader!();
  twice.push(out.subarray(0, 30));
  twice.push(out);
  assert.deepEqual(twice.finish(result(out)), expected);
});

test("run listing: an entry's mtime is find's seconds in ms, rounded half up (exact decimal arithmetic, as BigInt says)", () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 99_999_999_999 }), fc.stringMatching(/^[0-9]{0,10}$/), (whole, frac) => {
      const text = frac === '' ? String(whole) : `${whole}.${frac}`;
      const fields = ['T', '1', 'R', '0', 'ok', '/w', 'N', '1', 'f', '1', text, 'a', '', 'X', '0', '0', 'Z'];
      const out = Buffer.from('\0@rr-list@3\0' + fields.map((f) => `${f}\0`).join(''));
      const [entry] = readListRecords(result(out), 1).records[0].entries;
      const digits = (frac + '0000').slice(0, 4);
      const expected = (BigInt(whole) * 10000n + BigInt(digits) + 5n) / 10n;
      assert.equal(entry.mtime, Number(expected), text);
    }),
    { numRuns: RUNS * 2 },
  );
});

test('run listing: a tree nested thousands of folders deep (parents missing) is an error or a listing, not a stack overflow escaping', () => {
  const deep = Array.from({ length: 20_000 }, () => 'a').join('/') + '/step_1';
  const fields = ['T', '1750000000', 'R', '0', 'ok', '/w', 'E', 'd', '4096', '1750000000', deep, '', 'X', '0', '0', 'Z'];
  const text = '\0@rr-list@3\0' + fields.map((f) => `${f}\0`).join('');
  typedOnly('parseListOutput', () => listRunsCommand(['/w'], { maxEntries: 10 }).parse(result(Buffer.from(text))));
});

// --- container discovery ---------------------------------------------------------------------------------------

const MARK = '@@remote-runs@@';
test('container discovery: any sections and rows give targets with valid ids, or RemoteRunsError', () => {
  const line = fc.oneof(
    fc.constantFrom(`${MARK} begin`, `${MARK} end`, `${MARK} pct out`, `${MARK} pct err`, `${MARK} pct rc 0`, `${MARK} docker out`, `${MARK} docker rc 0`, `${MARK} docker rc x`, `${MARK} pct absent`, `${MARK}`, `${MARK}  `),
    fc.constantFrom('VMID       Status     Lock         Name', '200        running                 ct', '201 stopped', 'abc running x', '<img>\trunning\tUp', 'a,b\texited\t', '\t\t', '$(x)\trunning\tUp 1 s'),
    fc.string({ unit: 'binary', maxLength: 30 }),
  );
  fc.assert(
    fc.property(fc.array(line, { maxLength: 25 }), fc.constantFrom(0, 0, 1), (lines, code) => {
      const text = lines.join('\n') + '\n';
      typedOnly('parseTargetsOutput', () => {
        const out = parseTargetsOutput(result(Buffer.from(text), { code }));
        assert.ok(out.targets.length <= lines.length + 1);
        for (const t of out.targets) {
          if (t.kind === 'pct') assert.match(t.id, /^\d+$/);
          if (t.kind === 'docker') assert.ok(t.id.length > 0 && !t.id.includes('\n'));
        }
      });
      assert.ok(parsePctList(text).every((t) => /^\d+$/.test(t.id)));
      assert.ok(parseDockerPs(text).every((t) => t.id.trim() === t.id && t.id !== ''));
    }),
    { numRuns: RUNS },
  );
});

// --- a checkpoint's files ------------------------------------------------------------------------------------

test('checkpoint file records: any bytes give safe sizes and finite times, or RemoteRunsError', () => {
  const rec = fc.oneof(
    fc.tuple(fc.oneof(fc.nat().map(String), field), fc.oneof(fc.constant('1700000000.25'), field), fc.oneof(rel, fc.constant(''))).map(([a, b, c]) => `${a}\t${b}\t${c}`),
    fc.string({ unit: 'binary', maxLength: 20 }).map((s) => s.replace(/\0/g, '')),
  );
  fc.assert(
    fc.property(fc.array(rec, { maxLength: 20 }), (recs) => {
      const stdout = Buffer.from(recs.map((r) => `${r}\0`).join(''));
      typedOnly('parseStatRecords', () => {
        const out = parseStatRecords(stdout);
        assert.ok(out.length <= recs.length);
        for (const f of out) assert.ok(Number.isSafeInteger(f.bytes) && Number.isFinite(f.mtime));
      });
    }),
    { numRuns: RUNS },
  );
});

// --- evals ---------------------------------------------------------------------------------------------------

test('eval listing: any framing, lying file lengths and junk metas give records or RemoteRunsError', () => {
  const meta = JSON.stringify({ id: '20250101-x-1-ab', profile: '<b>p</b>', checkpoint: '/c', startedAt: 'not a date', command: 'x', cwd: '/', step: 1, run: {} });
  const part = fc.oneof(
    fc.constantFrom('E 20250101-x-1-ab', 'E ../../etc', 'E ', 'N', '', 'A 1', 'A x', 'Q RUNNING', 'Q -', 'L 12', 'L -5', 'L 1e400', 'Z'),
    fc.tuple(fc.constantFrom('meta', 'status', 'results', 'tail', 'jobid', 'bad name'), fc.oneof(fc.constant(meta), fc.string({ maxLength: 30 }), fc.constant('{"acc": 1}\n{"x": NaN}\n')), fc.integer({ min: -2, max: 2 })).map(
      ([name, body, lie]) => `F ${name} ${Buffer.byteLength(body) + lie}\n${body}`,
    ),
    fc.string({ unit: 'binary', maxLength: 20 }),
  );
  fc.assert(
    fc.property(fc.array(part, { maxLength: 15 }), (parts) => {
      const out = Buffer.from(parts.join('\n') + '\n');
      typedOnly('parseEvalListing', () => {
        const raw = parseEvalListing(out);
        assert.ok(raw.length <= parts.length);
        const records = toEvalRecords(raw, (id) => `/evals/${id}`);
        for (const r of records) assert.ok(Number.isFinite(r.startedAt) && r.results.every((x) => Object.values(x).every(Number.isFinite)));
      });
      typedOnly('parseEvalMeta', () => parseEvalMeta(parts.join('')));
    }),
    { numRuns: RUNS },
  );
});

test('eval log read and stop report: any bytes give a header or RemoteRunsError; the data is a slice of the reply', () => {
  const header = fc.oneof(fc.constantFrom('- 10 1 -', '0 0 0 RUNNING', '-3 5 1 x', '1e9 1 1 -', '- -1 1 -', '0 1'), fc.string({ unit: 'binary', maxLength: 20 }));
  fc.assert(
    fc.property(header, fc.boolean(), fc.uint8Array({ maxLength: 50 }), fc.string({ unit: 'binary', maxLength: 40 }), (h, nl, data, stop) => {
      const out = Buffer.concat([Buffer.from(h + (nl ? '\n' : '')), Buffer.from(data)]);
      typedOnly('parseReadOutput', () => {
        const r = parseReadOutput(out);
        assert.ok(r.data.length < out.length && Number.isSafeInteger(r.header.size));
      });
      typedOnly('parseStopOutput', () => parseStopOutput(stop));
      typedOnly('parseStopOutput', () => parseStopOutput(`noise\nstopped 1 0 ${stop}\n`));
    }),
    { numRuns: RUNS },
  );
});

test('eval result lines: any output gives finite numbers only, at most one result per line', () => {
  const evalLine = fc.oneof(
    fc.dictionary(fc.oneof(fc.constantFrom('__proto__', 'constructor', '<script>', 'acc'), fc.string({ maxLength: 6 })), fc.oneof(fc.double(), fc.string({ maxLength: 4 }), fc.constant(null)), { maxKeys: 4 }).map((o) => JSON.stringify(o)),
    fc.constantFrom('{"acc": NaN}', '{"a": 1e999}', '{}', 'acc=0.5 loss=1e400', 'acc=<img src=x>', '{"a":1}\r', '{"__proto__": 1}', '{"a": ' + '['.repeat(3000)),
    fc.string({ unit: 'binary', maxLength: 40 }),
  );
  const pattern = compileResultPattern('acc=(?<acc>\\S+)(?: loss=(?<loss>\\S+))?');
  fc.assert(
    fc.property(fc.array(evalLine, { maxLength: 20 }), fc.boolean(), (lines, withPattern) => {
      const text = lines.join('\n');
      const all = [...parseResults(text, withPattern ? pattern : undefined), ...parseResultsFile(text)];
      for (const l of lines) parseResultLine(l, pattern);
      assert.ok(all.length <= 2 * lines.length);
      for (const r of all) {
        assert.equal(Object.getPrototypeOf(r), Object.prototype, 'a result object with a changed prototype');
        for (const v of Object.values(r)) assert.ok(Number.isFinite(v));
      }
    }),
    { numRuns: RUNS },
  );
});

test('eval resultPattern from a profile: any text compiles or throws bad-config', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('(?<a>', '(?<1a>x)', '(?<a>x)(?<a>y)', '[', '(?<a>(a+)+)b')), (p) => {
      typedOnly('compileResultPattern', () => compileResultPattern(p));
    }),
    { numRuns: RUNS },
  );
});

// --- our own inputs that can carry remote names ---------------------------------------------------------------

test('CLI addresses and config files: any text parses or throws RemoteRunsError', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.jsonValue({ maxDepth: 4 }), (s, json) => {
      typedOnly('parseAddress', () => parseAddress(s));
      typedOnly('parseConfigFile', () => parseConfigFile(s, '/c.json'));
      typedOnly('parseConfigFile', () => parseConfigFile(JSON.stringify({ hosts: json }), '/c.json'));
      typedOnly('parseConfigFile', () => parseConfigFile(JSON.stringify(json) ?? '', '/c.json'));
      const { hosts, problems } = parseHostsSetting(json, 'remoteRuns.hosts');
      assert.ok(hosts.length + problems.length <= JSON.stringify(json ?? null).length + 1);
    }),
    { numRuns: RUNS },
  );
});

test('run listing: folders whose names differ in any bytes (UTF-8 or not) stay distinct runs', () => {
  const nameBytes = fc.uint8Array({ minLength: 1, maxLength: 12 }).map((b) => Buffer.from(b.map((x) => (x === 0 || x === 0x2f ? 0x41 : x))));
  fc.assert(
    fc.property(fc.uniqueArray(nameBytes, { minLength: 1, maxLength: 6, selector: (b) => b.toString('hex') }), (names) => {
      const usable = names.filter((n) => n.toString('latin1') !== '.' && n.toString('latin1') !== '..');
      const parts: Buffer[] = [Buffer.from('\0@rr-list@3\0')];
      const rec = (...f: (string | Buffer)[]): void => void parts.push(...f.flatMap((x) => [Buffer.from(x), Buffer.from([0])]));
      rec('T', '1');
      rec('R', '0', 'ok', '/w');
      for (const n of usable) {
        rec('E', 'd', '0', '1', n, Buffer.alloc(0));
        rec('E', 'f', '5', '1', Buffer.concat([n, Buffer.from('/model_step_3.pt')]), Buffer.alloc(0));
      }
      rec('X', '0', '0');
      rec('Z');
      const out = listRunsCommand(['/w'], {}).parse(result(Buffer.concat(parts)));
      const runs = out.roots[0].state === 'ok' ? out.roots[0].runs : [];
      assert.equal(new Set(runs.map((r) => r.name)).size, usable.length, `names ${JSON.stringify(runs.map((r) => r.name))}`);
    }),
    { numRuns: RUNS },
  );
});

test('run listing: N records are read in place with the numbers find printed, in its usual and unusual forms alike', () => {
  // size, mtime as printed → bytes, ms: digits and a point are read from the text; anything else as Number() reads it.
  const cases: [string, string, number, number][] = [
    ['0', '1750000000', 0, 1_750_000_000_000],
    ['4096', '1750000000.5', 4096, 1_750_000_000_500],
    ['007', '1750000000.12345678901', 7, 1_750_000_000_123],
    ['12345678901234567', '1750000000.00049', 12345678901234568, 1_750_000_000_000],
    ['1e3', '1.75e9', 1000, 1_750_000_000_000],
    ['1', '1750000000.0125', 1, 1_750_000_000_013],
  ];
  const fields = ['T', '1750000000', 'R', '0', 'ok', '/w', 'N', '1', 'd', '4096', '1750000000', 'run', ''];
  cases.forEach(([size, mtime], i) => fields.push('N', '2', 'f', size, mtime, `f${i}`, i === 0 ? 'Klatest' : ''));
  fields.push('X', '0', '0', 'Z');
  const out = Buffer.from('\0@rr-list@3\0' + fields.map((f) => `${f}\0`).join(''));
  const [root] = readListRecords(result(out), 1).records;
  assert.deepEqual(
    root.entries.slice(1).map((e) => [e.rel, e.bytes, e.mtime]),
    cases.map(([, , bytes, ms], i) => [`run/f${i}`, bytes, ms]),
  );
  assert.equal(root.entries[1].link, 'latest');
  // A size that is not a number is still refused, with the entry named.
  const bad = Buffer.from(out.toString('latin1').replace('\x004096\x001750000000.5\x00', '\x0040x6\x001750000000.5\x00'), 'latin1');
  assert.throws(() => readListRecords(result(bad), 1), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'protocol' && /bad entry/.test(e.message));
});

test('run listing: a large output pushed at once (read 64 KiB at a time) is what the same bytes give in small chunks', () => {
  const fields = ['T', '1750000000', 'R', '0', 'ok', '/w'];
  for (let r = 0; r < 80; r++) {
    fields.push('N', '1', 'd', '4096', '1750000000.5', `run_${r}`, '');
    fields.push('N', '2', 'f', '120', '1750000001.25', 'metrics.jsonl', '');
    fields.push('N', '2', 'd', '4096', '1750000000.5', 'checkpoints', '');
    for (let s = 1; s <= 40; s++) {
      fields.push('N', '3', 'd', '4096', '1750000000.5', `step_${s * 100}`, '');
      fields.push('N', '4', 'f', String(1000 + s), `17500${String(s).padStart(5, '0')}.123456789`, 'checkpoint.pt', '');
    }
  }
  fields.push('X', '0', '0', 'Z');
  const out = Buffer.from('\0@rr-list@3\0' + fields.map((f) => `${f}\0`).join(''));
  assert.ok(out.length > 3 * 64 * 1024, `the output (${out.length} bytes) spans several pieces`);
  const command = listRunsCommand(['/w'], { maxEntries: 100_000 });
  const whole = command.parse(result(out));
  const chunked = command.reader!();
  for (let at = 0; at < out.length; at += 777) chunked.push(out.subarray(at, at + 777));
  assert.deepEqual(chunked.finish(result(out)), whole);
  const [listing] = whole.roots;
  assert.equal(listing.state, 'ok');
  if (listing.state !== 'ok') return;
  assert.equal(listing.runs.length, 80);
  assert.deepEqual(listing.runs.map((run) => run.checkpoints.length), Array(80).fill(40));
  const last = listing.runs.find((run) => run.name === 'run_79')!.checkpoints.find((c) => c.step === 4000)!;
  assert.deepEqual([last.bytes, last.files[0].mtime], [1040, 1_750_000_040_123]);
});
