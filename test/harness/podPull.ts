/**
 * A downloading process of its own for the kill tests of pod downloads (test/integration/kubePull.test.ts): pulls one
 * checkpoint of a pod container with the core's pullCheckpoint and podTransferSource, as the CLI's pull does, and
 * prints a line per progress report (`bytes N`) so the test kills it mid-transfer; `done SHA` at the end.
 * Usage: node --import tsx podPull.ts JSON, JSON = { kubeconfig, context, target, checkpoint, root, run, options }.
 */
import { pullCheckpoint } from '../../src/core/transfer';
import { podTransferSource } from '../../src/core/transfer/podSource';

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]);
  const source = podTransferSource('cluster', { cluster: { kind: 'kubernetes', name: 'cluster', context: spec.context, kubeconfig: spec.kubeconfig } }, spec.target);
  const outcome = await pullCheckpoint(source, spec.checkpoint, { root: spec.root, run: spec.run }, {
    ...spec.options,
    holder: 'podPull test process',
    onProgress: (p) => {
      if (p.phase === 'transfer') process.stdout.write(`bytes ${p.bytesDone}\n`);
    },
  });
  process.stdout.write(`done ${outcome.summary}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
