/**
 * A process that owns one command in a pod container, run by the core's PodExecutor as the extension and the CLI run
 * it (test/integration/kubeLifeline.test.ts kills it with -9, as a crashed extension host or CLI). Arguments: a JSON
 * `{ access, pod, argv }`. Prints kubectl's pid once it has started, then waits for the command.
 */
import { PodExecutor } from '../../src/core/kube/executor';
import { podTarget, type PodContainer } from '../../src/core/kube/names';
import type { KubectlAccess } from '../../src/core/kube/kubectl';
import { wrapForTarget } from '../../src/core/targets';

const { access, pod, argv } = JSON.parse(process.argv[2] ?? '{}') as { access: KubectlAccess; pod: PodContainer; argv: string[] };
const holder = { add: (pid: number | undefined) => process.stdout.write(`kubectl ${pid}\n`), remove: () => undefined };
void new PodExecutor(access, pod, holder).exec(wrapForTarget(podTarget(pod), argv)).then((r) => {
  process.stdout.write(`ended ${r.code}\n`);
});
