/**
 * What each empty or failed listing means, in words a user can act on. Shared by the tree, the CLI and the
 * language server so the same case always reads the same way, and two cases never read alike.
 */
import type { EmptyKind, ErrorKind } from './types';

export interface EmptyStateText {
  /** Short label for a tree item. */
  title: string;
  /** What to check or do about it. */
  hint: string;
  /** A codicon id for the item. */
  icon: string;
}

export const EMPTY_STATES: Readonly<Record<EmptyKind, EmptyStateText>> = {
  unreachable: { title: 'Unreachable', hint: 'The host did not answer on its SSH port (or a jump host failed). Check the address, port and network.', icon: 'debug-disconnect' },
  'auth-failed': { title: 'Authentication failed', hint: 'The server refused every key and password offered. Check user, identityFile and your SSH agent.', icon: 'lock' },
  'host-key-unknown': { title: 'Host key not trusted', hint: 'The host key is not in known_hosts and was not accepted. Retry to see its fingerprint.', icon: 'shield' },
  'host-key-mismatch': { title: 'Host key mismatch', hint: 'The host presented a different key than known_hosts records. This may be an attack, or the host was reinstalled: check, then remove the old line.', icon: 'warning' },
  'container-missing': { title: 'Container does not exist', hint: 'The container is not on this host. Check the id in the host\'s targets.', icon: 'question' },
  'container-stopped': { title: 'Container is stopped', hint: 'Start the container to see its runs.', icon: 'debug-stop' },
  'path-missing': { title: 'Path does not exist', hint: 'This run root is not on the target. Set runRoots for the host to where your runs are.', icon: 'circle-slash' },
  'permission-denied': { title: 'Permission denied', hint: 'The login user cannot read this directory.', icon: 'lock' },
  'not-a-directory': { title: 'Not a directory', hint: 'This run root is a file, not a directory.', icon: 'file' },
  empty: { title: 'Empty directory', hint: 'The directory exists and holds nothing.', icon: 'folder' },
  'no-checkpoints': { title: 'No runs recognised', hint: 'The directory holds entries, but none looks like a run (checkpoints or a metrics log).', icon: 'search' },
  'command-failed': { title: 'Listing command failed', hint: 'The remote listing command failed. See the log for its output.', icon: 'error' },
  'kube-config': { title: 'Kubeconfig problem', hint: 'kubectl found no usable kubeconfig or context for this cluster. Check the entry\'s context and kubeconfig (kubectl config get-contexts).', icon: 'gear' },
  'credential-plugin': { title: 'Credential plugin failed', hint: 'The kubeconfig\'s exec credential plugin is missing or failed. Install it, or log in with your cloud\'s CLI, then retry.', icon: 'key' },
  forbidden: { title: 'Forbidden by RBAC', hint: 'The cluster\'s RBAC denied the verb and resource named in the message. Ask for a Role that grants it.', icon: 'lock' },
  'exec-refused': { title: 'Exec refused', hint: 'The cluster refused to open an exec stream into the container (a proxy or the kubelet). See the log for kubectl\'s words.', icon: 'error' },
  'kubectl-missing': { title: 'kubectl not found', hint: 'Install kubectl, or set remoteRuns.kubectlPath (user settings) to it.', icon: 'tools' },
};

export function emptyStateText(kind: ErrorKind): EmptyStateText {
  if (kind in EMPTY_STATES) return EMPTY_STATES[kind as EmptyKind];
  switch (kind) {
    case 'cancelled':
      return { title: 'Cancelled', hint: 'The operation was cancelled.', icon: 'circle-slash' };
    case 'timeout':
      return { title: 'Timed out', hint: 'The host took too long to answer.', icon: 'watch' };
    case 'disk-full':
      return { title: 'Local disk full', hint: 'The download stopped; what was written is kept in the .part file. Free space, then download again to continue.', icon: 'database' };
    case 'changed':
      return { title: 'Remote file changed', hint: 'The remote file changed during the download; it will be fetched again from the start.', icon: 'history' };
    case 'verify-failed':
      return { title: 'Checksum mismatch', hint: 'The local bytes differ from the remote file. The .part file is kept; fetch again to replace it.', icon: 'error' };
    case 'exists':
      return { title: 'Local file kept', hint: 'A different local file is in the way and was not overwritten.', icon: 'file' };
    case 'bad-config':
      return { title: 'Configuration problem', hint: 'Check the remoteRuns settings.', icon: 'gear' };
    default:
      return { title: 'Error', hint: 'See the log for details.', icon: 'error' };
  }
}

/**
 * The short reason of a state row: the message's first sentence without what the label already says (`connect
 * ECONNREFUSED …` under `Unreachable`), at most ~80 characters.
 */
export function stateReason(label: string, message: string): string {
  let first = message.split(/(?<=[.!?])\s|\n/)[0]?.trim() ?? '';
  if (first.startsWith(label)) first = first.slice(label.length).replace(/^[\s:.,-]+/, '');
  if (first.toLowerCase() === label.toLowerCase()) return '';
  return first.length > 80 ? `${first.slice(0, 79)}…` : first;
}
