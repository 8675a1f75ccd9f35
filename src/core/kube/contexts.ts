/**
 * The contexts of the user's kubeconfig, for "Use Contexts from ~/.kube/config" (the welcome view and Add Host): read
 * with `kubectl config get-contexts -o name` through the kubectl runner (kube/kubectl.ts), so the same kubectl and the
 * same kubeconfig resolution ($KUBECONFIG, else ~/.kube/config) the clusters will use answer; and the cluster entries
 * made of them, each named so that it is a valid, unused host name (config.ts requireName: no `/`, unique).
 */
import * as fs from 'node:fs';
import { RemoteRunsError } from '../types';
import { expandHome } from '../util/home';
import { kubectlFailure } from './errors';
import { runKubectl, type KubectlAccess, type RunKubectlOptions } from './kubectl';

/** `[--kubeconfig=F] config get-contexts -o name`: no `--context`, which would select one instead of listing them. */
export function getContextsArgs(kubeconfig?: string, home?: string): string[] {
  return [...(kubeconfig ? [`--kubeconfig=${expandHome(kubeconfig, home)}`] : []), 'config', 'get-contexts', '-o', 'name'];
}

/** kubectl's answer: one context name per line (kubectl pkg/cmd/config/get_contexts.go prints `name` alone with `-o name`). */
export function parseContextNames(stdout: Buffer | string): string[] {
  const names = (typeof stdout === 'string' ? stdout : stdout.toString('utf8')).split('\n').map((l) => l.replace(/\r$/, '').trim()).filter(Boolean);
  return [...new Set(names)];
}

/**
 * The context names of the kubeconfig (`kubeconfig`, else kubectl's own: $KUBECONFIG, else ~/.kube/config). A
 * kubeconfig without contexts (or none at all: kubectl then prints nothing and succeeds) is `kube-config`, said; a
 * named kubeconfig that is not there says so; one kubectl cannot read is its own failure, named by kube/errors.ts.
 */
export async function listContexts(
  access: Pick<KubectlAccess, 'kubectl' | 'home'> & { kubeconfig?: string },
  options: Pick<RunKubectlOptions, 'signal' | 'env'> = {},
): Promise<string[]> {
  const result = await runKubectl(access, getContextsArgs(access.kubeconfig, access.home), options);
  if (result.code !== 0) throw kubectlFailure(result);
  const names = parseContextNames(result.stdout);
  if (names.length === 0) {
    // kubectl 1.32 lists a --kubeconfig that does not exist as one without contexts (exit 0, nothing printed).
    const file = access.kubeconfig ? expandHome(access.kubeconfig, access.home) : undefined;
    if (file && !fs.existsSync(file)) throw new RemoteRunsError('kube-config', `The kubeconfig ${file} does not exist`, { cause: 'kubeconfig-missing', file });
    const where = access.kubeconfig ? access.kubeconfig : '$KUBECONFIG, else ~/.kube/config';
    throw new RemoteRunsError('kube-config', `The kubeconfig has no contexts (${where}): kubectl config get-contexts lists none. Log in with your cloud's CLI (it writes one), or name a kubeconfig.`, { cause: 'context-missing' });
  }
  return names;
}

/**
 * A host name for a context: the cluster's own short name where the context spells it in a known way (EKS
 * `arn:aws:eks:REGION:ACCOUNT:cluster/NAME`, GKE `gke_PROJECT_LOCATION_NAME`), else the context itself, with `/`
 * (the separator of an address's parts) and spaces made `-`; `-2`, `-3`… added when the name is taken.
 */
export function clusterEntryName(context: string, taken: ReadonlySet<string>): string {
  const eks = /^arn:aws[\w-]*:eks:[^:]*:\d*:cluster\/(.+)$/.exec(context);
  const gke = /^gke_[^_]+_[^_]+_(.+)$/.exec(context);
  const base = (eks?.[1] ?? gke?.[1] ?? context).replace(/[/\s]+/g, '-').replace(/^-+|-+$/g, '') || 'cluster';
  if (!taken.has(base)) return base;
  for (let i = 2; ; i++) if (!taken.has(`${base}-${i}`)) return `${base}-${i}`;
}

/** A cluster entry of `remoteRuns.hosts` as the settings hold it. */
export interface ClusterEntry {
  name: string;
  kind: 'kubernetes';
  context: string;
  namespace?: string;
}

/** Entries for `contexts`, named apart from `taken` (the names of every host and cluster configured) and each other. */
export function clusterEntriesFor(contexts: readonly { context: string; namespace?: string }[], taken: Iterable<string>): ClusterEntry[] {
  const names = new Set(taken);
  return contexts.map(({ context, namespace }) => {
    const name = clusterEntryName(context, names);
    names.add(name);
    return { name, kind: 'kubernetes', context, ...(namespace ? { namespace } : {}) };
  });
}
