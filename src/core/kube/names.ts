/**
 * Kubernetes object names, checked where they enter (kubectl's JSON, a target id, an address): the API server accepts
 * only these, so a name outside them comes from something that is not an API server and is reported, never used.
 * The rules are k8s.io/apimachinery `pkg/util/validation/validation.go`: IsDNS1123Label (namespaces:
 * kubernetes `pkg/apis/core/validation/validation.go` ValidateNamespaceName; containers: validateContainers) and
 * IsDNS1123Subdomain (pods: ValidatePodName is NameIsDNSSubdomain). Neither holds `/` nor `:`, which is what lets a
 * pod container be spelled `NAMESPACE/POD:CONTAINER` without escaping.
 */
import { RemoteRunsError, type TargetRef } from '../types';

const LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** An RFC 1123 label of at most 63 characters: a namespace or a container name. */
export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && LABEL.test(s);
}

/** An RFC 1123 subdomain of at most 253 characters: dot-separated labels (a pod name). */
export function isDns1123Subdomain(s: string): boolean {
  return s.length > 0 && s.length <= 253 && s.split('.').every((part) => LABEL.test(part));
}

/** A pod's container as a target (TargetRef kind `pod`). */
export interface PodContainer {
  namespace: string;
  pod: string;
  container: string;
}

/** `NAMESPACE/POD:CONTAINER`, the id of a `pod` TargetRef. */
export function podTargetId(p: PodContainer): string {
  return `${p.namespace}/${p.pod}:${p.container}`;
}

export function podTarget(p: PodContainer): TargetRef {
  return { kind: 'pod', id: podTargetId(p) };
}

/** The parts of a `pod` target id; throws RemoteRunsError('bad-address') for anything that is not three Kubernetes names. */
export function parsePodTargetId(id: string): PodContainer {
  const m = /^([^/]*)\/([^:]*):(.*)$/s.exec(id);
  if (!m) throw new RemoteRunsError('bad-address', `Not a pod container: ${JSON.stringify(id)} (expected NAMESPACE/POD:CONTAINER)`);
  const [, namespace, pod, container] = m;
  if (!isDns1123Label(namespace)) throw new RemoteRunsError('bad-address', `${JSON.stringify(namespace)} is not a Kubernetes namespace name`);
  if (!isDns1123Subdomain(pod)) throw new RemoteRunsError('bad-address', `${JSON.stringify(pod)} is not a Kubernetes pod name`);
  if (!isDns1123Label(container)) throw new RemoteRunsError('bad-address', `${JSON.stringify(container)} is not a Kubernetes container name`);
  return { namespace, pod, container };
}
