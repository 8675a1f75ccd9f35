/**
 * One hop's SSH handshake over a stream that is already open (a TCP socket or a channel through the previous hop):
 * key exchange, the host key policy, authentication. A watchdog bounds the time the server takes, not counting the
 * time a person spends answering a prompt.
 *
 * This folder never imports `vscode`.
 */
import type { Duplex } from 'node:stream';
import { Client, type ConnectConfig } from 'ssh2';
import { RemoteRunsError } from '../types';
import { makeAuthHandler, type SecretStore } from './auth';
import { mapClientError } from './clientErrors';
import { hostKeyAlgorithms, knownHostsFor, verifyHostKey } from './hostKeyPolicy';
import { countDataAsAlive } from './keepalive';
import type { Logger, Prompter, ResolvedHop } from './types';

/** Everything dialling one hop needs, the defaults of ConnectOptions already applied. */
export interface HopContext {
  prompter: Prompter;
  logger: Logger;
  knownHostsFiles: string[];
  /** knownHostsFiles were named for this run (CLI --known-hosts, like `ssh -o UserKnownHostsFile=`): they win over the ssh config's. */
  knownHostsPinned: boolean;
  secrets: SecretStore;
  agent: string | undefined;
  timeoutMs: number;
  keepaliveIntervalMs: number;
  keepaliveCountMax: number;
  signal?: AbortSignal;
}

/** An authenticated hop: its client, and the host key it presented and was trusted with. */
export interface OpenHop {
  client: Client;
  /** As presented (known_hosts matched it, or the user said yes); empty if ssh2 never asked us to verify one. */
  hostKey: Buffer;
}

/** Key exchange, host key check and authentication for one hop over an already open stream. */
export async function openHop(hop: ResolvedHop, sock: Duplex, ctx: HopContext, where: string): Promise<OpenHop> {
  const serverHostKey = await hostKeyAlgorithms(knownHostsFor(hop, ctx).files, hop);

  const client = new Client();
  return new Promise<OpenHop>((resolve, reject) => {
    let failure: RemoteRunsError | undefined;
    let trustedKey: Buffer | undefined;
    let done = false;
    const finish = (err?: RemoteRunsError): void => {
      if (done) return;
      done = true;
      watchdog.stop();
      ctx.signal?.removeEventListener('abort', onAbort);
      client.off('ready', onReady);
      client.off('close', onClose);
      if (err) {
        client.destroy();
        reject(err);
      } else {
        countDataAsAlive(client, sock, ctx.keepaliveIntervalMs);
        resolve({ client, hostKey: trustedKey ?? Buffer.alloc(0) });
      }
    };
    const watchdog = new Watchdog(ctx.timeoutMs, () => {
      failure ??= new RemoteRunsError('unreachable', `Cannot reach ${where}: no answer within ${ctx.timeoutMs / 1000} s during the SSH handshake`, {
        hop: hop.alias,
      });
      finish(failure);
    });
    const onAbort = (): void => finish(new RemoteRunsError('cancelled', 'Connection attempt cancelled'));
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    const prompter = pausingPrompter(ctx.prompter, watchdog);
    const agent = hop.identityAgent === undefined ? ctx.agent : (hop.identityAgent ?? undefined);
    const { handler, trace } = makeAuthHandler({ hop, prompter, logger: ctx.logger, secrets: ctx.secrets.for(hop), agent });

    const hostVerifier = (key: Buffer, verify: (ok: boolean) => void): void => {
      verifyHostKey(hop, key, ctx, prompter, where).then(
        () => {
          trustedKey = key;
          verify(true);
        },
        (e: unknown) => {
          failure ??= e instanceof RemoteRunsError ? e : new RemoteRunsError('host-key-unknown', `Host key check for ${where} failed: ${String(e)}`);
          verify(false);
        },
      );
    };
    const onReady = (): void => finish();
    const onClose = (): void =>
      finish(failure ?? new RemoteRunsError('unreachable', `Cannot reach ${where}: the connection closed during the SSH handshake`, { hop: hop.alias }));
    client.on('error', (e: Error & { level?: string }) => {
      failure ??= mapClientError(e, hop, trace, where);
      finish(failure);
    });
    client.once('ready', onReady);
    client.once('close', onClose);

    const config: ConnectConfig = {
      sock: sock as ConnectConfig['sock'],
      username: hop.user,
      hostVerifier,
      authHandler: handler,
      readyTimeout: 0, // our Watchdog instead: ssh2's would also count the time a person spends typing
      keepaliveInterval: ctx.keepaliveIntervalMs,
      keepaliveCountMax: ctx.keepaliveCountMax,
      algorithms: { serverHostKey: serverHostKey as NonNullable<ConnectConfig['algorithms']>['serverHostKey'] },
    };
    try {
      client.connect(config);
    } catch (e) {
      finish(new RemoteRunsError('protocol', `Cannot connect to ${where}: ${e instanceof Error ? e.message : String(e)}`));
    }
  });
}

/** A timer that does not run while a person is answering a prompt. */
class Watchdog {
  private timer: NodeJS.Timeout | undefined;
  private paused = 0;
  private stopped = false;

  constructor(
    private readonly ms: number,
    private readonly onFire: () => void,
  ) {
    this.start();
  }

  private start(): void {
    if (this.ms > 0 && !this.stopped) this.timer = setTimeout(() => this.onFire(), this.ms);
  }

  /** Run `work` with the watchdog paused; it restarts from zero afterwards. */
  async pausedFor<T>(work: () => Promise<T>): Promise<T> {
    if (this.paused++ === 0) clearTimeout(this.timer);
    try {
      return await work();
    } finally {
      if (--this.paused === 0) this.start();
    }
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }
}

/** The prompter, with the handshake watchdog paused while each question is open. */
function pausingPrompter(p: Prompter, wd: Watchdog): Prompter {
  return {
    confirmHostKey: (info) => wd.pausedFor(() => p.confirmHostKey(info)),
    passphrase: (keyPath) => wd.pausedFor(() => p.passphrase(keyPath)),
    password: (user, host) => wd.pausedFor(() => p.password(user, host)),
    keyboardInteractive: (user, host, name, instructions, prompts) =>
      wd.pausedFor(() => p.keyboardInteractive(user, host, name, instructions, prompts)),
  };
}
