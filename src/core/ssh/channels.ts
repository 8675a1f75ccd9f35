/**
 * Stopping one running command's channel. Shared by SshConnection's own commands and the transfer lanes that
 * stream a command's output.
 *
 * This folder never imports `vscode`.
 */
import type { ClientChannel } from 'ssh2';

/** The ssh2 internals `Channel.signal` uses; see stopChannel for why we call them directly. */
interface ChannelInternals {
  type?: string;
  outgoing?: { id: number; state: string };
  _client?: { _protocol?: { signal(id: number, name: string): void } };
}

/**
 * Stop a running command: send SIGTERM to its process group (sshd's "signal" request does killpg on the session),
 * then close the channel. Closing alone is not enough: sshd keeps a session open until its command exits, and a
 * command that does not write (sleep, a blocked `pct exec`) never notices the closed pipes. ssh2's own
 * `signal()` refuses once stdin is ended, which we do right after starting every command, so go one level down.
 */
export function stopChannel(ch: ClientChannel): void {
  const c = ch as unknown as ChannelInternals;
  try {
    // After EOF ('eof') a channel request is still valid SSH; only a closing channel is not.
    const state = c.outgoing?.state;
    if (c.type === 'session' && (state === 'open' || state === 'eof')) c._client?._protocol?.signal(c.outgoing!.id, 'TERM');
  } catch {
    // channel already closing
  }
  ch.close();
}
