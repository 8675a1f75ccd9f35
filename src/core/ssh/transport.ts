/**
 * What the pool hands out for a host: a Transport, one logged-in connection that runs commands. Two kinds exist:
 * the built-in ssh2 client (SshConnection, connection.ts) and the system's OpenSSH client (OpenSshConnection,
 * opensshConnection.ts) for hosts whose ssh config asks for something ssh2 cannot do.
 *
 * This folder never imports `vscode`.
 */
import type { Executor } from '../remote';
import type { RemoteRunsError } from '../types';
import type { Event } from '../util/event';

/** Why a connection closed: `error` is undefined when we closed it ourselves. */
export interface CloseEvent {
  error?: RemoteRunsError;
}

export type TransportKind = 'ssh2' | 'openssh';

/** One open connection to a host, whichever client carries it. Once closed it stays closed: the pool makes a new one. */
export interface Transport extends Executor {
  readonly kind: TransportKind;
  /** Fires once, when the connection is gone. */
  readonly onDidClose: Event<CloseEvent>;
  /** True once the connection is gone (or going). */
  readonly isClosed: boolean;
  /** Commands and streams running on it right now. */
  readonly openChannels: number;
  /** Close on purpose: pending commands reject with `cancelled`. */
  close(): void;
}
