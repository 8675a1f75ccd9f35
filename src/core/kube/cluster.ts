/**
 * What the tree and the CLI ask a cluster, as kubectl verbs (pure argv builders beside the calls that run them, so
 * the argv is tested without a server): its namespaces, its pods (the entry's namespace or every namespace, its
 * label selector), and the owner objects that know what pods cannot say (a Kueue-suspended job has no pods yet).
 */
import { RemoteRunsError } from '../types';
import { kubectlOutput, type KubectlAccess, type RunKubectlOptions } from './kubectl';
import { listItems, parseNamespaceList, parsePodList, type PodInfo } from './pods';
import { ownerObjects, type OwnerObject } from './workloads';

/** Each request to the API server gives up after this (kubectl --request-timeout): an unanswered server is said, not waited on. */
export const REQUEST_TIMEOUT_SECONDS = 30;

/** `get pods -o json` in the entry's namespace (else `--all-namespaces`), with its selector. */
export function podsVerb(access: KubectlAccess): string[] {
  const { cluster } = access;
  return ['get', 'pods', '-o', 'json', ...(cluster.namespace ? [] : ['--all-namespaces']), ...(cluster.selector ? [`--selector=${cluster.selector}`] : [])];
}

/**
 * The owner kinds read, fully qualified so a CRD of another group with the same short name is never read instead:
 * batch Jobs (kubernetes pkg/apis/batch), JobSets (jobset.x-k8s.io, jobset api/jobset/v1alpha2), the Training
 * Operator's jobs (kubeflow.org, common_types.go) and Trainer v2's TrainJobs (trainer.kubeflow.org).
 */
export const OWNER_RESOURCES = ['jobs.batch', 'jobsets.jobset.x-k8s.io', 'pytorchjobs.kubeflow.org', 'trainjobs.trainer.kubeflow.org'] as const;

export function ownersVerb(access: KubectlAccess, resource: string): string[] {
  return ['get', resource, '-o', 'json', ...(access.cluster.namespace ? [] : ['--all-namespaces'])];
}

type Options = Pick<RunKubectlOptions, 'signal' | 'holder' | 'env'>;

export async function listPods(access: KubectlAccess, options: Options = {}): Promise<{ pods: PodInfo[]; problems: string[] }> {
  return parsePodList(await kubectlOutput(access, podsVerb(access), { ...options, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS }));
}

export async function listNamespaces(access: KubectlAccess, options: Options = {}): Promise<{ namespaces: { name: string; phase?: string }[]; problems: string[] }> {
  return parseNamespaceList(await kubectlOutput(access, ['get', 'namespaces', '-o', 'json'], { ...options, namespace: null, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS }));
}

/**
 * The owner objects of OWNER_RESOURCES. A kind the cluster does not serve (no JobSet CRD installed: kubectl's `the
 * server doesn't have a resource type`) is said in `problems` and skipped; any other failure (RBAC, unreachable) is
 * thrown as itself, never taken for "no jobs".
 */
export async function listOwners(access: KubectlAccess, options: Options = {}): Promise<{ owners: OwnerObject[]; problems: string[] }> {
  const owners: OwnerObject[] = [];
  const problems: string[] = [];
  for (const resource of OWNER_RESOURCES) {
    try {
      owners.push(...ownerObjects(listItems(await kubectlOutput(access, ownersVerb(access, resource), { ...options, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS }), resource)));
    } catch (e) {
      if (e instanceof RemoteRunsError && e.kind === 'command-failed' && /the server doesn't have a resource type/.test(String(e.detail.kubectl ?? ''))) {
        problems.push(`${resource}: not served by this cluster (its CRD is not installed)`);
        continue;
      }
      throw e;
    }
  }
  return { owners, problems };
}
