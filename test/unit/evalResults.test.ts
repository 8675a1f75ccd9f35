/** Result lines: JSON objects of numbers, or a profile regex with named groups. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileResultPattern, formatResultsFile, parseResultLine, parseResults, parseResultsFile } from '../../src/core/eval/results';
import { RemoteRunsError } from '../../src/core/types';
import type { EvalResult } from '../../src/core/eval/types';
import { latestValues } from '../../src/core/eval/table';

test('a JSON object of numbers is a result; anything else is output', () => {
  assert.deepEqual(parseResultLine('{"acceptance_length": 3.41, "tokens_per_s": 812}'), { acceptance_length: 3.41, tokens_per_s: 812 });
  assert.deepEqual(parseResultLine('  {"loss": -1e-3}  \r'), { loss: -0.001 });
  for (const line of ['{"model": "drafter", "acc": 1}', '{"acc": null}', '{"acc": true}', '{}', '[1, 2]', '{"acc": 1', 'acc 1', '{"a": {"b": 1}}', '']) {
    assert.equal(parseResultLine(line), undefined, line);
  }
});

test('a pattern extracts its named numeric groups', () => {
  const re = compileResultPattern('acceptance length[:=] (?<acc_len>[0-9.]+)(?: over (?<n>\\d+) prompts)?');
  assert.deepEqual(parseResultLine('step 20000: acceptance length: 3.52 over 80 prompts', re), { acc_len: 3.52, n: 80 });
  assert.deepEqual(parseResultLine('acceptance length= 3.5', re), { acc_len: 3.5 }, 'an optional group that did not match is left out');
  assert.equal(parseResultLine('no numbers here', re), undefined);
  const words = compileResultPattern('model=(?<model>\\w+)');
  assert.equal(parseResultLine('model=drafter', words), undefined, 'a match without a number is not a result');
});

test('JSON wins over the pattern on the same line (never counted twice)', () => {
  const re = compileResultPattern('"acc": (?<acc>[0-9.]+)');
  assert.deepEqual(parseResults('{"acc": 0.5}\nacc line "acc": 0.7\n', re), [{ acc: 0.5 }, { acc: 0.7 }]);
});

test('a bad pattern is a bad-config error', () => {
  assert.throws(() => compileResultPattern('(?<a>[0-9'), (e: unknown) => e instanceof RemoteRunsError && e.kind === 'bad-config' && /not a valid regular expression/.test(e.message));
  assert.throws(() => compileResultPattern('acc=([0-9.]+)'), (e: unknown) => e instanceof RemoteRunsError && /no named group/.test(e.message));
});

test('results.jsonl round-trips and skips foreign lines', () => {
  const results: EvalResult[] = [{ a: 1, b: 2.5 }, { a: 3 }];
  assert.equal(formatResultsFile(results), '{"a":1,"b":2.5}\n{"a":3}\n');
  assert.deepEqual(parseResultsFile(formatResultsFile(results) + 'garbage\n{"x": "y"}\n'), results);
  assert.deepEqual(parseResultsFile(''), []);
});

test('metric names that are Object.prototype names are metrics like any other (__proto__, constructor)', () => {
  const json = parseResultLine('{"__proto__": 1.5, "constructor": 2, "toString": 3}')!;
  assert.deepEqual(Object.entries(json), [['__proto__', 1.5], ['constructor', 2], ['toString', 3]]);
  assert.equal(Object.getPrototypeOf(json), Object.prototype, 'the prototype is untouched');
  const byPattern = parseResultLine('score 7', compileResultPattern('score (?<__proto__>\\d+)'))!;
  assert.deepEqual(Object.entries(byPattern), [['__proto__', 7]]);
  const latest = latestValues([json, JSON.parse('{"__proto__": 4}') as EvalResult]);
  assert.deepEqual(Object.entries(latest), [['__proto__', 4], ['constructor', 2], ['toString', 3]]);
});
