/**
 * Show Job Logs (a job row's context menu): the logs of every pod of a Kubernetes job, merged in time order with rank
 * prefixes (kube/logs.ts followJobLogs, the one follow the CLI's `remote-runs logs --follow` uses), in a terminal of
 * its own that follows until every pod has ended; closing the terminal stops every kubectl it started. Lines are
 * already shown safe (formatLogLine: displayText); the notes too, through displayText here.
 */
import * as vscode from 'vscode';
import type { RemoteRunsCore } from '../core/service';
import type { TreeNode } from '../core/tree/nodes';
import { RemoteRunsError, asRemoteRunsError } from '../core/types';
import { followJobLogs, formatLogLine } from '../core/kube/logs';
import { displayText } from '../shared/display';

export function showJobLogs(core: RemoteRunsCore, node: TreeNode | undefined): void {
  if (!node || node.type !== 'job') throw new RemoteRunsError('not-found', 'Select a job of a Kubernetes cluster in the Remote Runs tree first');
  const cluster = core.cluster(node.hostName);
  if (!cluster) throw new RemoteRunsError('not-found', `Cluster ${node.hostName} is no longer configured`);
  const job = node.workload;
  const write = new vscode.EventEmitter<string>();
  const closed = new vscode.EventEmitter<void>();
  const stop = new AbortController();
  // A terminal line ends with CR LF; the dim notes are this extension's own (SGR 2), never remote text's.
  const say = (text: string): void => write.fire(`${text}\r\n`);
  const pty: vscode.Pseudoterminal = {
    onDidWrite: write.event,
    onDidClose: closed.event,
    open: () => {
      say(`\x1b[2m${displayText(`${job.kind} ${job.namespace}/${job.name} on ${cluster.name}: ${job.pods.length} pod${job.pods.length === 1 ? '' : 's'}, merged in time order`)}\x1b[0m`);
      followJobLogs(core.kubectlAccess(cluster), job, {
        signal: stop.signal,
        onLine: (l) => say(formatLogLine(l, false)),
        // Said as the CLI says it on stderr, so a note is never read as a line of the pod's log.
        onNote: (label, text) => say(`\x1b[2mremote-runs: [${displayText(label)}] ${displayText(text)}\x1b[0m`),
      }).then(
        () => say('\x1b[2m(every pod of the job has ended)\x1b[0m'),
        (e: unknown) => {
          if (stop.signal.aborted) return;
          const err = asRemoteRunsError(e);
          say(`\x1b[31m${displayText(`${err.kind}: ${err.message}`)}\x1b[0m`);
        },
      );
    },
    close: () => {
      stop.abort();
      write.dispose();
      closed.dispose();
    },
  };
  vscode.window.createTerminal({ name: `Remote Runs: logs ${job.name}`, pty }).show();
}
