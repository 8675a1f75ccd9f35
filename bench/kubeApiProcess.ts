/**
 * The test Kubernetes API server (test/harness/kubeApi.ts) in a process of its own, for benchmarks: run inside the
 * bench's process, every byte it relays (kubectl ↔ server ↔ the sandboxed command) waits whenever that thread is busy,
 * and our pull hashes and writes on it while `kubectl cp` leaves it idle, which slows ours and not the anchor. Serves
 * the PyTorchJob fixture's pods (test/fixtures/kube/pytorchjob.json); prints one JSON line (its kubeconfig, the
 * sandbox folder of `NS/POD:CONTAINER`) on stdout and stops when its stdin closes (its parent ended, however).
 *
 *   node --import tsx bench/kubeApiProcess.ts NS POD CONTAINER
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startKubeApi } from '../test/harness/kubeApi';

export interface KubeApiProcess {
  kubeconfig: string;
  /** The container's sandbox: what its commands see as `/workspace`. */
  workspace: string;
  pid: number;
  stop(): Promise<void>;
}

/** An API server process with the fixture's pods, its context `admin` in `kubeconfig`. */
export async function startKubeApiProcess(ns: string, pod: string, container: string): Promise<KubeApiProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', __filename, ns, pod, container], { stdio: ['pipe', 'pipe', 'inherit'], cwd: path.join(__dirname, '..') });
  const ready = await new Promise<{ kubeconfig: string; workspace: string }>((resolve, reject) => {
    let text = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      const line = text.split('\n')[0];
      if (text.includes('\n')) resolve(JSON.parse(line));
    });
    child.once('exit', (code) => reject(new Error(`the API server process exited with ${code} before it served`)));
  });
  return {
    ...ready,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.stdin!.end();
      }),
  };
}

if (require.main === module) {
  const [ns, pod, container] = process.argv.slice(2);
  void (async () => {
    const api = await startKubeApi();
    const fixtures = path.join(__dirname, '..', 'test', 'fixtures', 'kube');
    api.setPods(JSON.parse(fs.readFileSync(path.join(fixtures, 'pytorchjob.json'), 'utf8')).items);
    const kubeconfig = api.writeKubeconfig({ contexts: [{ name: 'admin' }] });
    const workspace = api.container(ns, pod, container).workspace;
    process.stdout.write(`${JSON.stringify({ kubeconfig, workspace })}\n`);
    process.stdin.resume();
    process.stdin.once('end', () => void api.stop().then(() => process.exit(0)));
  })();
}
