/**
 * A run's host and its logging, as a panel shows them (issue 17): the link state machine over the pool's states
 * (core/metrics/follow/liveness.ts), the "stopped logging" threshold, the texts the webview shows (webview/liveness.ts),
 * and the presenter sending a change of link alone (no new points) as an update.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { initialLink, nextLink, stoppedAfterMs, STOPPED_MIN_MS, type LinkState } from '../../src/core/metrics/follow/liveness';
import type { ConnectionState } from '../../src/core/ssh/types';
import { Series } from '../../src/core/metrics';
import { MetricsPresenter, type FeedView } from '../../src/extension/metrics/presenter';
import { formatAge, liveness } from '../../src/webview/liveness';
import type { RunRefWire } from '../../src/shared/metricsProtocol';
import { parseTailOutput } from '../../src/core/metrics/follow/tail';
import { RunFeed } from '../../src/core/metrics/follow/runFeed';
import { RemoteRunsError } from '../../src/core/types';

function walk(events: [number, ConnectionState][], start: ConnectionState = { kind: 'idle' }): LinkState[] {
  let link = initialLink(start, 0);
  const out = [link];
  for (const [t, e] of events) out.push((link = nextLink(link, e, t)));
  return out;
}

test('link: connected, the connection lost (reconnecting since then), attempts given up (unreachable since then, with the reason), back', () => {
  const states = walk([
    [1, { kind: 'connecting', attempt: 1 }],
    [2, { kind: 'connected' }],
    [100, { kind: 'unreachable', message: 'read ECONNRESET' }], // the connection dropped with an error
    [101, { kind: 'connecting', attempt: 1 }],
    [103, { kind: 'connecting', attempt: 2 }],
    [107, { kind: 'unreachable', message: 'connection refused' }], // the pool gave up
    [110, { kind: 'connecting', attempt: 1 }], // the next poll tries again: still unreachable since 100
    [111, { kind: 'unreachable', message: 'connection refused' }],
    [200, { kind: 'connected' }],
  ]);
  assert.deepEqual(states.map((s) => s.state), ['connecting', 'connecting', 'connected', 'reconnecting', 'reconnecting', 'reconnecting', 'unreachable', 'unreachable', 'unreachable', 'connected']);
  assert.deepEqual(states[3], { state: 'reconnecting', since: 100, attempt: 0, lastError: 'read ECONNRESET' });
  assert.deepEqual(states[6], { state: 'unreachable', since: 100, reason: 'connection refused', attempt: 0 });
  assert.deepEqual(states[7], { state: 'unreachable', since: 100, reason: 'connection refused', attempt: 1 });
  assert.deepEqual(states[9], { state: 'connected', since: 200 });
});

test('link: a clean close (idle) is not a failure; a first connect that fails is unreachable since the first try; login refused is its own state', () => {
  const idle = walk([[1, { kind: 'connected' }], [50, { kind: 'idle' }]]);
  assert.equal(idle.at(-1)!.state, 'connected');
  const never = walk([[5, { kind: 'connecting', attempt: 1 }], [9, { kind: 'unreachable', message: 'connection refused' }]]);
  assert.deepEqual(never.at(-1), { state: 'unreachable', since: 0, reason: 'connection refused', attempt: 0 });
  const auth = walk([[5, { kind: 'connecting', attempt: 1 }], [9, { kind: 'auth-failed', message: 'publickey refused' }], [20, { kind: 'connecting', attempt: 1 }]]);
  assert.deepEqual(auth.at(-1), { state: 'refused', kind: 'auth-failed', since: 0, reason: 'publickey refused' });
  // Removed stays removed whatever the pool says (the feed tries again only when the hosts change).
  assert.equal(nextLink({ state: 'removed', since: 1, reason: 'gone' }, { kind: 'connected' }, 2).state, 'removed');
});

test('stopped logging: five usual gaps, never under five minutes', () => {
  assert.equal(stoppedAfterMs([]), STOPPED_MIN_MS);
  assert.equal(stoppedAfterMs([1000, 2000, 1500]), STOPPED_MIN_MS);
  assert.equal(stoppedAfterMs([600_000, 120_000, 600_000]), 5 * 600_000);
});

const connected = { link: { state: 'connected' as const }, stoppedAfterMs: STOPPED_MIN_MS };

test('panel texts: logging, stopped, unknown while the host cannot be asked; unreachable with the reason and the time', () => {
  assert.deepEqual(liveness({ ...connected, loggedAgoMs: 12_000 }, 'box', 3000, 0).activity, { activity: 'logging', text: 'last logged 15 s ago' });
  assert.deepEqual(liveness({ ...connected, loggedAgoMs: 3600_000 }, 'box', 0, 0).activity, { activity: 'stopped', text: 'stopped logging: last logged 60 min ago' });
  assert.equal(liveness({ ...connected, loggedAgoMs: null }, 'box', 0, 0).activity.activity, 'none');
  const now = new Date(2026, 0, 30, 14, 10, 0).getTime();
  const down = liveness({ link: { state: 'unreachable', forMs: 60_000, reason: 'connection refused', attempt: 0 }, loggedAgoMs: 3600_000, stoppedAfterMs: STOPPED_MIN_MS }, 'box', 5000, now);
  assert.equal(down.connection.state, 'unreachable');
  assert.equal(down.connection.text, 'box unreachable since 14:08:55: connection refused (trying again at the next poll)');
  assert.deepEqual(down.activity, { activity: 'unknown', text: 'last logged 60 min ago (before the connection was lost)' });
  const back = liveness({ link: { state: 'reconnecting', forMs: 2000, attempt: 2, lastError: 'read ECONNRESET' }, loggedAgoMs: 1000, stoppedAfterMs: STOPPED_MIN_MS }, 'box', 0, now);
  assert.equal(back.connection.text, 'reconnecting to box since 14:09:58 (attempt 2): connection lost: read ECONNRESET');
  assert.equal(liveness({ link: { state: 'removed', reason: 'x' }, loggedAgoMs: null, stoppedAfterMs: 1 }, 'box', 0, now).connection.text, 'host box was removed from settings: this run is no longer followed');
  assert.deepEqual(['45 s', '2 min', '1.5 h', '2 h', '3 d'], [45_000, 95_000, 5400_000, 7200_000, 3 * 86_400_000].map(formatAge));
});

test('presenter: a change of link alone (no new points) is sent as a header update, and only once', () => {
  const s = new Series('loss');
  s.push(1, 2);
  let link: LinkState = { state: 'connected', since: 0 };
  const feed: FeedView = {
    series: () => new Map([['loss', s]]),
    revision: 1,
    status: 'following',
    skipped: undefined,
    badLines: 0,
    latestStep: () => 1,
    get link() { return link; },
    lastLoggedAt: 500,
    stoppedAfterMs: STOPPED_MIN_MS,
  };
  let now = 1000;
  const p = new MetricsPresenter({ plateau: () => ({ window: 10, fraction: 0.01 }), now: () => now });
  const ref = { hostName: 'box', target: { kind: 'host', id: '' }, runPath: '/r', runName: 'r', metrics: [], checkpoints: [] } as RunRefWire;
  p.addRun(ref, 'primary', feed);
  const snap = p.snapshot('panel', 't')!;
  assert.deepEqual(snap.runs[0].link, { state: 'connected' });
  assert.equal(snap.runs[0].loggedAgoMs, 500);
  now = 5000;
  assert.equal(p.update(), undefined, 'time passing alone is no message (the page counts on)');
  link = { state: 'unreachable', since: 4000, reason: 'connection refused', attempt: 0 };
  const u = p.update()!;
  assert.deepEqual(u.runs[0].link, { state: 'unreachable', forMs: 1000, reason: 'connection refused', attempt: 0 });
  assert.deepEqual(u.runs[0].series, []);
  assert.equal(p.update(), undefined);
});

test('the tail reply carries the remote clock, so a log age is measured on one clock', () => {
  const out = Buffer.from('noise\n@rr-tail@1\nok 3 1700000000.5 42 0 616263 - 1700000060\nabc');
  const r = parseTailOutput({ code: 0, stdout: out, stderr: Buffer.alloc(0), signal: null } as never, { offset: 0, maxBytes: 10, expectHead: '', expectInode: '' }, 'read');
  assert.equal(r.status, 'ok');
  if (r.status === 'ok') assert.equal(r.stat.remoteNowMs! - r.stat.mtimeMs, 59_500);
  // A reply without it (an older script) still parses; the age is unknown then.
  const old = parseTailOutput({ code: 0, stdout: Buffer.from('\n@rr-tail@1\nok 3 1700000000 42 0 616263 -\nabc'), stderr: Buffer.alloc(0), signal: null } as never, { offset: 0, maxBytes: 10, expectHead: '', expectInode: '' }, 'read');
  assert.ok(old.status === 'ok' && old.stat.remoteNowMs === undefined);
});

test('a feed whose host was removed from settings says so once and stops polling; the hosts changing makes it try again', async () => {
  const logged: string[] = [];
  let asked = 0;
  let back = false;
  const feed = new RunFeed(
    { hostName: 'gone', target: { kind: 'host', id: '' }, runPath: '/r', runName: 'r', metrics: ['/r/train.jsonl'], checkpoints: [] },
    {
      executor: () => {
        asked++;
        if (back) return { exec: async () => ({ code: 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), signal: null }) } as never;
        throw new RemoteRunsError('not-found', 'No host named "gone" is configured (no hosts are configured)');
      },
      intervalMs: () => 5,
      log: (m) => logged.push(m),
    },
  );
  feed.start();
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(feed.link.state, 'removed');
  assert.equal(feed.status, 'host gone was removed from settings');
  assert.equal(asked, 1, 'asked once in 100 ms at a 5 ms interval: polling stopped');
  assert.equal(logged.length, 1);
  assert.match(logged[0], /No host named "gone" is configured.*no longer polling/);
  feed.hostsChanged();
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(feed.link.state, 'removed', 'the hosts changed, but not back: still removed');
  assert.equal(logged.length, 1, 'and nothing said again');
  back = true;
  feed.hostsChanged();
  assert.equal(feed.link.state, 'connecting', 'the host is back: followed again');
  feed.dispose();
});
