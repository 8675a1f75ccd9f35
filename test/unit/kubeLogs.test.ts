/** The merge of a job's logs (kube/logs.ts): kubectl's --timestamps read, lines put in time order across pods, shown safe. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LogMerger, formatLogLine, parseTimestamped, type JobLogLine } from '../../src/core/kube/logs';

function line(label: string, time: string, text: string): JobLogLine {
  const t = parseTimestamped(`${time} ${text}`);
  assert.ok(t, time);
  return { label, container: 'pytorch', pod: `bert-${label}`, time: t.time, key: t.key, text: t.text };
}

test('kubectl --timestamps lines: the kubelet\'s RFC3339Nano time (trailing zeros trimmed) read into a key that sorts as time does', () => {
  const a = parseTimestamped('2026-12-05T10:01:02.1Z step 1');
  const b = parseTimestamped('2026-12-05T10:01:02.12Z step 2');
  const c = parseTimestamped('2026-12-05T10:01:02Z step 0');
  const d = parseTimestamped('2026-12-05T11:01:02.05+01:00 step 0.5');
  assert.deepEqual([a?.time, a?.text], ['2026-12-05T10:01:02.1Z', 'step 1']);
  // Lexically "02.1Z" > "02.12Z": the key compares the nanoseconds, not the text.
  assert.ok(a!.key < b!.key, `${a!.key} < ${b!.key}`);
  assert.ok(c!.key < d!.key && d!.key < a!.key, 'an offset is the same instant in UTC');
  assert.equal(parseTimestamped('no stamp here'), undefined);
  assert.equal(parseTimestamped('2026-12-05T10:01:02.1Z'), undefined, 'a stamp without its space and text is not a line');
  assert.equal(parseTimestamped('2026-12-05T10:01:02.1Z  two spaces')?.text, ' two spaces', 'the text is kept as written');
});

test('lines of several pods come out in time order once held long enough, ties in rank order', () => {
  const order = ['master-0', 'worker-0', 'worker-1'];
  const m = new LogMerger(100, (l) => order.indexOf(l.label));
  // worker-1's stream delivers first, though master-0 wrote first.
  m.push(line('worker-1', '2026-12-05T10:00:00.3Z', 'w1 a'), 1000);
  m.push(line('master-0', '2026-12-05T10:00:00.1Z', 'm a'), 1010);
  m.push(line('worker-0', '2026-12-05T10:00:00.3Z', 'w0 a'), 1020);
  assert.deepEqual(m.take(1050), [], 'nothing is held long enough yet');
  assert.deepEqual(m.take(1100).map((l) => l.text), ['m a', 'w0 a', 'w1 a'], 'the ripe line takes every line up to its time along, in order; the tie goes to the lower rank');
  assert.equal(m.size, 0);
  // A later line that is not ripe stays; an earlier-stamped line arriving late is still shown, in order with what is ripe.
  m.push(line('master-0', '2026-12-05T10:00:01Z', 'm b'), 1200);
  m.push(line('worker-0', '2026-12-05T10:00:02Z', 'w0 b'), 1290);
  assert.deepEqual(m.take(1300).map((l) => l.text), ['m b']);
  assert.deepEqual(m.take(1300, true).map((l) => l.text), ['w0 b'], 'all: whatever is held');
});

test('a line whose time is before lines already shown is shown when it comes, never dropped', () => {
  const m = new LogMerger(10);
  m.push(line('worker-0', '2026-12-05T10:00:05Z', 'late one'), 0);
  assert.deepEqual(m.take(10).map((l) => l.text), ['late one']);
  m.push(line('worker-1', '2026-12-05T10:00:01Z', 'earlier, arrived later'), 20);
  assert.deepEqual(m.take(30).map((l) => l.text), ['earlier, arrived later']);
});

test('a line is shown with its rank, and never raw: terminal controls and bidi escaped, the prefix unforgeable by a newline', () => {
  assert.equal(formatLogLine({ label: 'worker-1', container: 'pytorch', text: 'loss 0.5' }, false), '[worker-1] loss 0.5');
  assert.equal(formatLogLine({ label: 'worker-1', container: 'sidecar', text: 'ok' }, true), '[worker-1:sidecar] ok');
  const shown = formatLogLine({ label: 'master-0', container: 'pytorch', text: '\u001b[2Jcleared\r\u202eevil' }, false);
  assert.equal(shown, '[master-0] \\x1b[2Jcleared\\x0d\\u202eevil');
});
