/**
 * Keepalive as OpenSSH's ServerAliveInterval means it: any bytes from the server count as a sign of life; and when
 * a chain of hops goes silent, the nearest silent hop is the one to blame.
 *
 * This folder never imports `vscode`.
 */
import type { Duplex } from 'node:stream';
import type { Client } from 'ssh2';

/** When each hop's client last received bytes (keepalive answers included). */
const lastHeard = new WeakMap<Client, { at: number }>();

/**
 * ssh2 counts only answers to its keepalive pings, so a connection busy streaming a big listing or a download on a
 * loaded machine (each answer queued behind megabytes of data) is declared dead while data keeps arriving. OpenSSH's
 * ServerAliveInterval takes any packet from the server as a sign of life: do the same, by restarting ssh2's
 * keepalive timer when bytes arrive (at most every half interval). A frozen server sends nothing: still caught.
 */
export function countDataAsAlive(client: Client, sock: Duplex, intervalMs: number): void {
  const reset = (client as unknown as { _resetKA?: () => void })._resetKA;
  const seen = { at: Date.now() };
  lastHeard.set(client, seen);
  if (intervalMs <= 0 || typeof reset !== 'function') return;
  const every = intervalMs / 2;
  let last = Date.now();
  // Attached after ssh2 resumed the socket (on ready), so this listener does not change how the socket flows.
  sock.on('data', () => {
    const now = (seen.at = Date.now());
    if (now - last < every) return;
    last = now;
    reset();
  });
}

/**
 * The hop to blame when hop `i` stopped answering keepalives: the nearest one that has been silent as long. A frozen
 * jump host silences every hop behind it too, and which of their keepalives runs out first is chance.
 */
export function silentHop(clients: Client[], i: number, intervalMs: number): number {
  const now = Date.now();
  for (let j = 0; j < i; j++) {
    const heard = lastHeard.get(clients[j])?.at;
    if (heard !== undefined && now - heard > 1.5 * intervalMs) return j;
  }
  return i;
}
