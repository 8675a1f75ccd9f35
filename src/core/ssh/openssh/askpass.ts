/**
 * Answers to an OpenSSH client's prompts, through its SSH_ASKPASS program (startPromptAnswerer: each prompt handed to
 * a function of this process). Two users: the OpenSSH transport of a host (connection.ts), whose prompts
 * go to the user's Prompter, and the transfers' OpenSSH sessions (startAskpass), described here:
 *
 * Passwords the pool already holds, handed to an OpenSSH client that asks for them, and to nothing else. OpenSSH
 * reads a password from its SSH_ASKPASS program (SSH_ASKPASS_REQUIRE=force, OpenSSH 8.4+); ours is a two-line
 * script in the transfer's 0700 folder that asks this process over a Unix socket in the same folder. The answer is
 * given only for the exact prompt OpenSSH shows for a login whose password the pool has (`user@host's password: `),
 * at most once per login (a second ask means the password was refused: asking again would only lock the account);
 * any other question (a key passphrase, a host key, a one-time code) is refused, and ssh gives up on it. The password
 * never touches the disk and lives no longer than the transfer.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { listenPrivate } from '../../util/privateSocket';

export interface AskpassLogin {
  user: string;
  hostname: string;
  password: string;
}

export interface Askpass {
  /** The program for SSH_ASKPASS. */
  readonly program: string;
  /** Environment for the ssh processes: SSH_ASKPASS, SSH_ASKPASS_REQUIRE, and what the program needs to run. */
  readonly env: Record<string, string>;
  /** How many answers were given, by login (`user@host`): for tests and the log. */
  readonly answered: Map<string, number>;
  dispose(): void;
}

/** The prompt OpenSSH (sshconnect2.c, userauth_passwd) shows for a password login. */
export function passwordPrompt(user: string, hostname: string): string {
  return `${user}@${hostname}'s password: `;
}

/** The askpass program's script: sends its argument (the prompt) and prints the one-line answer; fails on none. */
const CLIENT_JS = `'use strict';
const net = require('net');
const sock = net.connect(process.env.REMOTE_RUNS_ASKPASS_SOCK);
let out = Buffer.alloc(0);
sock.on('data', (d) => { out = Buffer.concat([out, d]); });
sock.on('error', () => process.exit(1));
sock.on('end', () => {
  if (out.length === 0 || out[0] !== 0x2b) process.exit(1);
  process.stdout.write(out.subarray(1));
  process.stdout.write('\\n');
});
sock.end(Buffer.from(String(process.argv[2] || ''), 'utf8'));
`;

/**
 * Answers one prompt of an ssh process: the text to type (a password, a passphrase, `yes`), or undefined to refuse
 * (ssh then gives up on that question). May ask the user; it is called once per prompt ssh shows.
 */
export type PromptAnswer = (prompt: string) => Promise<string | undefined> | string | undefined;

/**
 * Start the answering side in `folder` (which must be private to this user), each prompt answered by `answer`.
 * `runtime` is this process's executable (node, or the editor's Electron, run as node).
 */
export async function startPromptAnswerer(folder: string, answer: PromptAnswer, runtime = process.execPath): Promise<Omit<Askpass, 'answered'>> {
  const socketPath = path.join(folder, 'askpass.sock');
  const script = path.join(folder, 'askpass.js');
  const program = path.join(folder, 'askpass');
  fs.writeFileSync(script, CLIENT_JS, { mode: 0o600 });
  const q = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
  fs.writeFileSync(program, `#!/bin/sh\nELECTRON_RUN_AS_NODE=1 exec ${q(runtime)} ${q(script)} "$1"\n`, { mode: 0o700 });
  const server = await listenPrivate(socketPath, (sock) => {
    const chunks: Buffer[] = [];
    let size = 0;
    sock.on('data', (d: Buffer) => {
      size += d.length;
      if (size > 4096) return sock.destroy();
      chunks.push(d);
    });
    sock.on('error', () => undefined);
    sock.on('end', () => {
      const prompt = Buffer.concat(chunks).toString('utf8');
      Promise.resolve()
        .then(() => answer(prompt))
        .then(
          (text) => sock.end(text === undefined ? Buffer.from('-') : Buffer.concat([Buffer.from('+'), Buffer.from(text, 'utf8')])),
          () => sock.end(Buffer.from('-')),
        );
    });
  }, { allowHalfOpen: true });
  let disposed = false;
  return {
    program,
    env: { SSH_ASKPASS: program, SSH_ASKPASS_REQUIRE: 'force', REMOTE_RUNS_ASKPASS_SOCK: socketPath },
    dispose() {
      if (disposed) return;
      disposed = true;
      server.close();
      for (const f of [socketPath, script, program]) fs.rmSync(f, { force: true });
    },
  };
}

/**
 * Start the answering side for `logins`: each login's own password prompt is answered once, every other prompt is
 * refused. `runtime` as for startPromptAnswerer.
 */
export async function startAskpass(folder: string, logins: AskpassLogin[], runtime = process.execPath): Promise<Askpass> {
  const answered = new Map<string, number>();
  const byPrompt = new Map(logins.map((l) => [passwordPrompt(l.user, l.hostname), l]));
  const answerer = await startPromptAnswerer(
    folder,
    (prompt) => {
      const login = byPrompt.get(prompt);
      const key = login ? `${login.user}@${login.hostname}` : '';
      if (!login || (answered.get(key) ?? 0) >= 1) return undefined;
      answered.set(key, 1);
      return login.password;
    },
    runtime,
  );
  return { ...answerer, answered };
}
