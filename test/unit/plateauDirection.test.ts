/**
 * The plateau hint knows which way is better and says only what is true (issue 17: on a rising `acc` it said "flat
 * since step 25248 (best 0.2548 at step 27424)"). The direction comes from the metric's name; the user flips it per
 * metric in the webview (its reducer owns the choice, saves it, and sends it in `view`), the presenter judges with
 * it; the hint's words never name a best newer than its "flat since".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonlParser, RunMetrics } from '../../src/core/metrics';
import { MetricsPresenter, type FeedView } from '../../src/extension/metrics/presenter';
import { parseFromWebview } from '../../src/extension/metrics/validate';
import { metricDirection, plateauDirection } from '../../src/shared/metricDirection';
import { metricsAt } from '../../src/demo/metrics';
import type { PlateauHint, RunRefWire } from '../../src/shared/metricsProtocol';
import { directionSwitch, nextDirection, plateauText } from '../../src/webview/plateauText';
import { initialState, reduce, savedState, type WebviewState } from '../../src/webview/viewState';

const ref: RunRefWire = { hostName: 'demo', target: { kind: 'pct', id: '200' }, runPath: '/workspace', runName: 'workspace', metrics: ['/workspace/logs/train.jsonl'], checkpoints: [] };

/** The demo's live run up to `last` (its own curves: the run the issue was filed on), through the real JSONL parser. */
function demoFeed(last: number): FeedView {
  const metrics = new RunMetrics('line');
  const parser = new JsonlParser(metrics);
  const lines: string[] = [];
  for (let step = 32; step <= last; step += 32) lines.push(JSON.stringify(metricsAt(step, 1_700_000_000 + step / 32)));
  parser.push(new TextEncoder().encode(lines.join('\n') + '\n'));
  return { series: () => metrics.series, get revision() { return metrics.revision; }, status: 'following', skipped: undefined, badLines: 0, latestStep: () => last };
}

function hintsOf(directions: Record<string, 'lower' | 'higher' | 'off'> = {}, last = 40_000, smoothing = 0.95): PlateauHint[] {
  const p = new MetricsPresenter({ plateau: () => ({ window: 2000, fraction: 0.01 }), now: () => 0 });
  p.addRun(ref, 'primary', demoFeed(last));
  p.setView(600, null, smoothing, [], directions);
  return p.snapshot('panel', 'workspace')!.runs[0].plateaus;
}

test('names say which way is better; the user\'s choice wins; no known direction means no hint', () => {
  assert.deepEqual(['loss', 'train/acc', 'eval/accept_rate', 'lr', 'grad_norm'].map(metricDirection), ['lower', 'higher', undefined, undefined, undefined]);
  assert.equal(plateauDirection('acc', {}), 'higher');
  assert.equal(plateauDirection('acc', { acc: 'lower' }), 'lower');
  assert.equal(plateauDirection('lr', {}), 'off');
  assert.equal(plateauDirection('lr', { lr: 'higher' }), 'higher');
  assert.equal(plateauDirection('constructor', {}), 'off', 'an inherited property is no choice');
  // A click flips a named metric first, then turns its hint off, then back; a nameless one goes off → lower → higher.
  assert.deepEqual([nextDirection('higher', 'higher'), nextDirection('lower', 'higher'), nextDirection('off', 'higher')], ['lower', 'off', 'higher']);
  assert.deepEqual([nextDirection('off', 'off'), nextDirection('lower', 'off'), nextDirection('higher', 'off')], ['lower', 'higher', 'off']);
  assert.deepEqual(directionSwitch('acc', 'higher', 'higher'), { symbol: '↑', label: 'Higher is better for acc (plateau hint); click for lower is better' });
  assert.deepEqual(directionSwitch('acc', 'lower', 'higher'), { symbol: '↓', label: 'Lower is better for acc (plateau hint); click for no plateau hint' });
});

test('the flip is the webview\'s: one view message carries it, the default again removes it, and it survives a reload', () => {
  let state: WebviewState = reduce(initialState(undefined, 0), { type: 'started', width: 500 }).state;
  const flip = reduce(state, { type: 'setDirection', key: 'acc', direction: 'lower' });
  assert.deepEqual(flip.post, [{ type: 'view', width: 500, range: null, smoothing: 0.6, hidden: [], directions: { acc: 'lower' } }]);
  assert.equal(flip.save, true);
  state = flip.state;
  assert.deepEqual(reduce(state, { type: 'setDirection', key: 'acc', direction: 'lower' }).post, [], 'the same choice again says nothing');
  // Saved with the other view settings and read back (malformed entries of a saved state are dropped).
  const saved = savedState(reduce(state, { type: 'setDirection', key: 'lr', direction: 'higher' }).state);
  assert.deepEqual(initialState(saved, 0).settings.directions, { acc: 'lower', lr: 'higher' });
  assert.deepEqual(initialState({ ui: { directions: { acc: 'up', '': 'lower', loss: 'off', x: 3 } } }, 0).settings.directions, { loss: 'off' });
  const proto = reduce(state, { type: 'setDirection', key: '__proto__', direction: 'higher' }).state.settings.directions;
  assert.deepEqual(Object.keys(proto), ['acc', '__proto__'], 'a metric named __proto__ is a key like any other');
  // Back to the name's own direction: no choice left, and the view says so.
  const back = reduce(state, { type: 'setDirection', key: 'acc', direction: 'higher' });
  assert.deepEqual(back.state.settings.directions, {});
  assert.deepEqual(back.post, [{ type: 'view', width: 500, range: null, smoothing: 0.6, hidden: [] }]);
});

test('the extension takes the directions of a view only when well-formed', () => {
  const view = { type: 'view', width: 300, range: null, smoothing: 0.6, hidden: [] };
  assert.deepEqual(parseFromWebview({ ...view, directions: { acc: 'lower', lr: 'off' } }), { ...view, directions: { acc: 'lower', lr: 'off' } });
  assert.deepEqual(parseFromWebview(view), view, 'absent: the names\' own');
  for (const bad of [{ acc: 'up' }, ['lower'], 'lower', { '': 'lower' }, { ['x'.repeat(501)]: 'lower' }]) {
    assert.equal(parseFromWebview({ ...view, directions: bad }), undefined, JSON.stringify(bad).slice(0, 40));
  }
});

test('the demo\'s rising acc: judged as higher-is-better, flipped to lower it is flat from the start, off it has no hint', () => {
  const own = hintsOf().find((h) => h.key === 'acc');
  assert.ok(own, 'the slowly rising acc (< 1% in 2000 steps) is flat by the settings');
  assert.equal(own.direction, 'higher');
  assert.ok(own.flatValue <= own.best && own.best <= own.flatValue * 1.01 + 1e-12, `rose at most 1% since: ${own.flatValue} → ${own.best}`);
  const lower = hintsOf({ acc: 'lower' }).find((h) => h.key === 'acc');
  assert.ok(lower && lower.direction === 'lower' && lower.flatSince < 1000, `lower is better: flat from the start (${lower?.flatSince})`);
  assert.equal(hintsOf({ acc: 'off' }).find((h) => h.key === 'acc'), undefined);
  assert.equal(hintsOf().find((h) => h.key === 'lr'), undefined, 'lr: no direction, no hint');
  assert.ok(hintsOf({ lr: 'lower' }).some((h) => h.key === 'lr' && h.direction === 'lower'), 'the cosine-decaying lr asked to fall: judged');
});

test('the hint never names a best newer than its "flat since", and says which way it judged', () => {
  let seen = 0;
  for (const last of [27_424, 30_000, 36_000, 40_000, 52_000]) {
    for (const smoothing of [0.6, 0.95]) {
      for (const h of hintsOf({}, last, smoothing)) {
        seen++;
        for (const mode of ['panel', 'inline'] as const) {
          const { short, full } = plateauText(h, mode);
          for (const text of [short, full]) {
            const steps = [...text.matchAll(/step (\d+)/g)].map((m) => Number(m[1]));
            assert.deepEqual(steps, [h.flatSince], `${h.key} at ${last}: only the flat-since step is named: ${text}`);
          }
          assert.match(full, h.direction === 'higher' ? /higher is better\): rose at most 1%/ : /lower is better\): fell at most 1%/);
        }
        assert.ok(h.bestStep >= h.flatSince, 'the best is at or after the flat start (what the old text showed as its own step)');
      }
    }
  }
  assert.ok(seen >= 5, `hints judged: ${seen}`);
});
