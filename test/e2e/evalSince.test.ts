/**
 * "Evaluate Every Checkpoint Since…" in a real VS Code against the real test sshd (issue 17): from the palette, pick
 * the run, the first checkpoint and the profile; every checkpoint from there on is evaluated, one after the other
 * (src/core/eval/queue.ts: each eval starts when the one before it ended), and each one's result shows on its tree
 * row as it finishes, while the earlier checkpoints get none.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, test } from 'node:test';
import { expandTreeRow, treeRow } from './treeRows';
import { pickQuickItem, quickPickStep } from './ui';
import { startVSCode, withArtifactsOnFailure, type VSCodeSession } from './vscode';
import { startTestHost, type TestHost } from '../harness/testHost';
import { TEST_USER } from '../harness/sshd';
import { testHostSettings } from './suite';

let host: TestHost;
let session: VSCodeSession;
let workspace: string;
let own: string;

before(async () => {
  host = await startTestHost();
  own = path.join(host.paths.runs, 'story', '.remote-runs');
  mkdirSync(own, { recursive: true });
  execFileSync('chown', ['-R', `${TEST_USER}:${TEST_USER}`, own]);
  workspace = mkdtempSync(path.join(tmpdir(), 'rr-e2e-ws-'));
  session = await startVSCode({
    workspaceFolder: workspace,
    settings: {
      ...testHostSettings(host, [host.hostConfig('sincebox', { targets: ['host'], runRoots: [host.paths.runs] })]),
      'remoteRuns.evalProfiles': [
        // Two profiles, so the profile is asked for. Each eval notes its start and end (in the run's folder, its
        // working directory) and answers a value made of its step, so a result on the wrong row would show.
        { name: 'other', where: 'target', command: 'echo \'{"other": 1}\'' },
        {
          name: 'acceptance',
          where: 'target',
          command: 's=${step}; echo "start $s" >> .remote-runs/order; sleep 2; echo "end $s" >> .remote-runs/order; echo "{\\"acceptance_length\\": $((s / 1000))}"',
        },
      ],
    },
  });
});

after(async () => {
  await session?.close();
  await host?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
});

const description = async (label: string): Promise<string> => (await treeRow(session, label).locator('.label-description').innerText().catch(() => '')) ?? '';

test('Evaluate Every Checkpoint Since… from the palette: run, first checkpoint, profile; each later checkpoint evaluated in turn, its result on its row', async () => {
  await withArtifactsOnFailure(session, 'eval-since', async () => {
    const steps = host.storySteps;
    const from = steps[steps.length - 3]!;
    const since = steps.filter((s) => s >= from);
    const earlier = steps.filter((s) => s < from);
    assert.equal(since.length, 3);

    await session.openViewContainer('Remote Runs');
    await expandTreeRow(session, 'sincebox');
    await expandTreeRow(session, 'host');
    await expandTreeRow(session, 'story');

    await session.runCommand('Remote Runs: Evaluate Every Checkpoint Since…');
    // One host, one target: those steps are skipped.
    const runs = await quickPickStep(session, /^Evaluate every checkpoint since \(3\/4\): run$/);
    assert.ok(runs.includes('story'), `story among ${runs.join(', ')}`);
    await pickQuickItem(session, 'story');
    const ckpts = await quickPickStep(session, /^Evaluate every checkpoint since \(4\/4\): checkpoint$/);
    assert.deepEqual(ckpts, [...steps].reverse().map((s) => `step_${s}`), 'every checkpoint, newest first');
    await pickQuickItem(session, `step_${from}`);
    const profiles = await quickPickStep(session, new RegExp(`^Evaluate 3 checkpoints of story since step ${from}: profile$`));
    assert.deepEqual(profiles, ['other', 'acceptance']);
    await pickQuickItem(session, 'acceptance');

    // The results arrive one by one, in step order: read the rows until the last one has its result, noting each
    // time a new row got one; earlier checkpoints never get one.
    const done = (d: string) => /eval ✓ acceptance_length=/.test(d);
    const order: number[] = [];
    const deadline = Date.now() + 240_000;
    while (order.length < since.length) {
      assert.ok(Date.now() < deadline, `results seen so far: ${order.join(', ') || 'none'}`);
      for (const s of since) {
        if (order.includes(s)) continue;
        if (done(await description(`step_${s}`))) order.push(s);
      }
      await session.page.waitForTimeout(250);
    }
    assert.deepEqual(order, since, 'each result shown as its eval finished, in step order');
    for (const s of since) assert.match(await description(`step_${s}`), new RegExp(`eval ✓ acceptance_length=${s / 1000}$`));
    for (const s of earlier) assert.doesNotMatch(await description(`step_${s}`), /eval/, `step_${s} is before the first picked`);

    // One after the other on the target: each eval started after the one before it ended.
    assert.equal(readFileSync(path.join(own, 'order'), 'utf8'), since.map((s) => `start ${s}\nend ${s}\n`).join(''));
    assert.equal(readdirSync(path.join(own, 'evals')).length, since.length, 'one eval per checkpoint');
    await session.waitForNotification(/^Remote Runs: 3 of 3 evaluated with acceptance\.$/, 60_000);
  });
});
