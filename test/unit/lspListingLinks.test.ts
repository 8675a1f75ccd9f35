/**
 * The language server's listings never walk into a link to a folder (core/discovery/listScript.ts): a path below one
 * is not called missing from its run root's listing; the listing of the path's own folder (whose root is followed)
 * answers instead. The real list script over a local tree, read by the server's own parser.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listPathsCommand } from '../../src/extension/lsp/listPaths';
import { answers, entryAt } from '../../src/lsp/listingView';
import { toView } from '../../src/lsp/remoteIndex';

function list(p: string, depth: number) {
  const cmd = listPathsCommand([p], depth);
  const r = spawnSync(cmd.argv[0], cmd.argv.slice(1));
  const out = cmd.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
  return toView(p, depth, { ok: true, ...out.paths[0], remoteNow: out.remoteNow });
}

test('a path below a link to a folder: the root listing does not answer for it; the folder listing through the link does', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rr-lsp-links-'));
  try {
    const scratch = path.join(tmp, 'scratch', 'ckpts', 'step_5');
    fs.mkdirSync(scratch, { recursive: true });
    fs.writeFileSync(path.join(scratch, 'model.pt'), 'x');
    const run = path.join(tmp, 'runs', 'exp1');
    fs.mkdirSync(run, { recursive: true });
    fs.writeFileSync(path.join(run, 'metrics.jsonl'), '{"step": 1, "loss": 1}\n');
    fs.symlinkSync(path.join(tmp, 'scratch', 'ckpts'), path.join(run, 'checkpoints'));
    const root = list(path.join(tmp, 'runs'), 5);
    assert.equal(entryAt(root, 'exp1/checkpoints')?.link, path.join(tmp, 'scratch', 'ckpts'));
    assert.equal(entryAt(root, 'exp1/checkpoints/step_5'), undefined, 'the link is not walked');
    assert.equal(answers(root, 'exp1/checkpoints/step_5/model.pt'), false, 'so the root listing cannot say it is missing');
    assert.equal(answers(root, 'exp1/metrics.jsonl'), true);
    const folder = list(path.join(run, 'checkpoints'), 2);
    assert.equal(answers(folder, 'step_5/model.pt'), true);
    assert.equal(entryAt(folder, 'step_5/model.pt')?.type, 'f');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
