/**
 * The delaying TCP proxy (test/harness/tcpProxy.ts) in a process of its own, for benchmarks: run inside the bench's
 * process, its forwarding waits whenever that thread is busy (our download hashes 4 MiB pieces on it), which slows
 * our pull and not scp's. Started by `startProxyProcess`; prints its port on stdout, ends with its parent.
 *
 *   node --import tsx bench/proxyProcess.ts TARGET_PORT DELAY_MS MAX_BUFFERED_BYTES
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { startTcpProxy } from '../test/harness/tcpProxy';

/** A proxy process in front of `targetPort`; its port, its pid (for its CPU) and a stop. */
export async function startProxyProcess(targetPort: number, delayMs: number, maxBufferedBytes: number): Promise<{ port: number; pid: number; stop: () => Promise<void> }> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', __filename, String(targetPort), String(delayMs), String(maxBufferedBytes)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    cwd: path.join(__dirname, '..'),
  });
  const port = await new Promise<number>((resolve, reject) => {
    let text = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      const m = /^(\d+)\n/.exec(text);
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the proxy process exited with ${code} before listening`)));
  });
  return {
    port,
    pid: child.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

if (require.main === module) {
  const [target, delay, maxBuffered] = process.argv.slice(2).map(Number);
  void startTcpProxy(target, { delayMs: delay, maxBufferedBytes: maxBuffered }).then((proxy) => {
    process.stdout.write(`${proxy.port}\n`);
    // Ends with its parent: stdin closes when the bench exits, however it exits.
    process.stdin.resume().once('end', () => process.exit(0));
    process.once('SIGTERM', () => void proxy.close().then(() => process.exit(0)));
  });
}
