/**
 * Client authentication in OpenSSH's order, as an ssh2 `authHandler`: `none` (to learn what the server
 * accepts, so we never ask for a password it would not take), the agent, each identity file that exists
 * (asking for an encrypted key's passphrase, up to three tries), keyboard-interactive, then password.
 *
 * Secrets live in a HostSecrets object held by the caller (the pool keeps one per host), in memory only:
 * a reconnect after a dropped connection reuses them instead of asking again. Nothing here logs a secret.
 *
 * This folder never imports `vscode`.
 */
import { promises as fs } from 'node:fs';
import { OpenSSHAgent, utils, type AnyAuthMethod, type AuthHandlerMiddleware, type AuthenticationType, type ParsedKey } from 'ssh2';
import type { Logger, Prompter, ResolvedHop } from './types';

/** How many times OpenSSH asks for a passphrase or password before moving on (NumberOfPasswordPrompts). */
export const PROMPT_TRIES = 3;

/** Secrets for one host, kept in memory for the life of the pool entry; never written anywhere. */
export class HostSecrets {
  /** Decrypted keys by path, so a reconnect neither asks nor re-runs bcrypt. */
  readonly keys = new Map<string, ParsedKey>();
  password: string | undefined;

  clear(): void {
    this.keys.clear();
    this.password = undefined;
  }
}

/** HostSecrets per login (`user@hostname:port`), shared by every connection that goes through that hop. */
export class SecretStore {
  private readonly byLogin = new Map<string, HostSecrets>();

  for(hop: ResolvedHop): HostSecrets {
    const key = `${hop.user}@${hop.hostname}:${hop.port}`;
    let s = this.byLogin.get(key);
    if (!s) this.byLogin.set(key, (s = new HostSecrets()));
    return s;
  }

  clear(): void {
    for (const s of this.byLogin.values()) s.clear();
    this.byLogin.clear();
  }
}

export interface AuthOptions {
  hop: ResolvedHop;
  prompter: Prompter;
  logger: Logger;
  secrets: HostSecrets;
  /** ssh-agent socket (SSH_AUTH_SOCK); undefined skips the agent. */
  agent: string | undefined;
}

/** What the handler tried, for the auth-failed message (method names only, never secrets). */
export interface AuthTrace {
  tried: string[];
  /** Methods the server said it accepts, after the first `none` attempt. */
  serverMethods: string[];
  /** Encrypted key files that were not offered because no (right) passphrase was given, with why. */
  locked: { path: string; why: 'no-passphrase' | 'wrong-passphrase' }[];
}

type Step =
  | { kind: 'none' }
  | { kind: 'agent' }
  /** IdentitiesOnly with an agent: only the agent's keys whose public half is one of the identity files (as ssh). */
  | { kind: 'agent-matching' }
  | { kind: 'key'; path: string }
  | { kind: 'keyboard-interactive'; tries: number }
  | { kind: 'password'; tries: number };

/** Build the authHandler for one hop of one connection attempt. */
export function makeAuthHandler(o: AuthOptions): { handler: AuthHandlerMiddleware; trace: AuthTrace } {
  const { hop, prompter, secrets } = o;
  const trace: AuthTrace = { tried: [], serverMethods: [], locked: [] };
  const steps: Step[] = [{ kind: 'none' }];
  // IdentitiesOnly means "only these keys": the agent would offer all of its own.
  if (o.agent && !hop.identitiesOnly) steps.push({ kind: 'agent' });
  // ssh offers an agent key under IdentitiesOnly when an IdentityFile names it (its .pub beside it, or the .pub
  // itself): how password-manager agents are used, the private key never on disk.
  if (o.agent && hop.identitiesOnly && hop.identityFiles.length > 0) steps.push({ kind: 'agent-matching' });
  for (const path of hop.identityFiles) steps.push({ kind: 'key', path });
  steps.push({ kind: 'keyboard-interactive', tries: 0 }, { kind: 'password', tries: 0 });

  let methodsLeft: string[] | null = null;
  /** The password just sent: a failure means it (or the cached one) was wrong. */
  let sentPassword = false;
  /**
   * The keyboard-interactive round just sent, and whether the server prompted in it. sshd without PAM lists the
   * method but fails it without a prompt: retrying would only burn MaxAuthTries.
   */
  let kbdRound: { prompted: boolean } | undefined;

  const allowed = (method: AuthenticationType): boolean => methodsLeft === null || methodsLeft.includes(method);

  async function next(): Promise<AnyAuthMethod | false> {
    const username = hop.user;
    if (sentPassword) {
      // Reaching here again means the last password failed: forget it so the next try asks.
      secrets.password = undefined;
      sentPassword = false;
    }
    if (kbdRound && !kbdRound.prompted) {
      const kbd = steps.find((s) => s.kind === 'keyboard-interactive');
      if (kbd && kbd.kind === 'keyboard-interactive') kbd.tries = PROMPT_TRIES;
    }
    kbdRound = undefined;
    while (steps.length > 0) {
      const step = steps[0];
      switch (step.kind) {
        case 'none':
          steps.shift();
          trace.tried.push('none');
          return { type: 'none', username };
        case 'agent':
          steps.shift();
          if (!allowed('publickey')) continue;
          trace.tried.push('agent');
          return { type: 'agent', username, agent: o.agent! };
        case 'agent-matching': {
          steps.shift();
          if (!allowed('publickey')) continue;
          const wanted = await publicBlobsOf(hop.identityFiles);
          if (wanted.size === 0) continue;
          trace.tried.push('agent (keys of the identity files)');
          return { type: 'agent', username, agent: new MatchingAgent(o.agent!, wanted) };
        }
        case 'key': {
          steps.shift();
          if (!allowed('publickey')) continue;
          const key = await loadKey(step.path, prompter, secrets, o.logger, trace);
          if (!key) continue;
          trace.tried.push(`publickey ${step.path}`);
          return { type: 'publickey', username, key };
        }
        case 'keyboard-interactive': {
          if (!allowed('keyboard-interactive') || step.tries >= PROMPT_TRIES) {
            steps.shift();
            continue;
          }
          step.tries++;
          trace.tried.push('keyboard-interactive');
          const round: { prompted: boolean } = { prompted: false };
          kbdRound = round;
          return {
            type: 'keyboard-interactive',
            username,
            prompt: (name, instructions, _lang, prompts, finish) => {
              round.prompted = true;
              prompter
                .keyboardInteractive(username, hop.alias, name, instructions, prompts.map((p) => ({ prompt: p.prompt, echo: p.echo ?? false })))
                .then(
                  (answers) => {
                    // Cancelled: stop asking; an empty answer list makes the server fail this round.
                    if (answers === undefined) step.tries = PROMPT_TRIES;
                    finish(answers ?? []);
                  },
                  () => {
                    step.tries = PROMPT_TRIES;
                    finish([]);
                  },
                );
            },
          };
        }
        case 'password': {
          if (!allowed('password') || step.tries >= PROMPT_TRIES) {
            steps.shift();
            continue;
          }
          step.tries++;
          let password = secrets.password;
          if (password === undefined) {
            password = await prompter.password(username, hop.alias);
            if (password === undefined) {
              steps.shift();
              continue;
            }
          }
          secrets.password = password;
          sentPassword = true;
          trace.tried.push('password');
          return { type: 'password', username, password };
        }
      }
    }
    return false;
  }

  const handler: AuthHandlerMiddleware = (authsLeft, _partial, callback) => {
    if (authsLeft) {
      methodsLeft = authsLeft;
      if (trace.serverMethods.length === 0) trace.serverMethods = [...authsLeft];
    }
    next().then(
      (m) => callback(m as AnyAuthMethod),
      (e: unknown) => {
        o.logger.warn(`Authentication to ${hop.alias} stopped: ${e instanceof Error ? e.message : String(e)}`);
        callback(false as unknown as AnyAuthMethod);
      },
    );
  };
  return { handler, trace };
}

/** The public key blobs (base64) of identity files: each `FILE.pub`, or FILE itself when it is a public key. */
async function publicBlobsOf(files: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const f of files) {
    for (const candidate of f.endsWith('.pub') ? [f] : [`${f}.pub`]) {
      let text: string;
      try {
        text = await fs.readFile(candidate, 'utf8');
      } catch {
        continue;
      }
      const parsed = utils.parseKey(text);
      const key = Array.isArray(parsed) ? parsed[0] : parsed;
      if (key && !(key instanceof Error)) out.add(key.getPublicSSH().toString('base64'));
    }
  }
  return out;
}

/** The user's agent, offering only the keys whose public blob is in `wanted`. */
class MatchingAgent extends OpenSSHAgent {
  constructor(
    socketPath: string,
    private readonly wanted: ReadonlySet<string>,
  ) {
    super(socketPath);
  }

  override getIdentities(cb: (err: Error | undefined, keys?: ParsedKey[]) => void): void {
    super.getIdentities((err, keys) => {
      if (err) return cb(err);
      const parsed = (keys ?? []).filter((k): k is ParsedKey => 'getPublicSSH' in k);
      cb(undefined, parsed.filter((k) => this.wanted.has(k.getPublicSSH().toString('base64'))));
    });
  }
}

/**
 * Read and parse one identity file. Missing files are skipped silently (OpenSSH's defaults often do not exist);
 * an encrypted key asks for its passphrase up to PROMPT_TRIES times; undefined from the prompter skips the key.
 */
async function loadKey(path: string, prompter: Prompter, secrets: HostSecrets, logger: Logger, trace: AuthTrace): Promise<ParsedKey | undefined> {
  const cached = secrets.keys.get(path);
  if (cached) return cached;
  let data: Buffer;
  try {
    data = await fs.readFile(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') logger.warn(`Cannot read identity file ${path}: ${code ?? String(e)}`);
    return undefined;
  }
  let parsed = utils.parseKey(data);
  if (parsed instanceof Error && /no passphrase given/i.test(parsed.message)) {
    for (let i = 0; i < PROMPT_TRIES; i++) {
      const passphrase = await prompter.passphrase(path);
      if (passphrase === undefined) {
        trace.locked.push({ path, why: 'no-passphrase' });
        return undefined;
      }
      parsed = utils.parseKey(data, passphrase);
      if (!(parsed instanceof Error)) break;
      logger.warn(`Wrong passphrase for ${path}`);
    }
    if (parsed instanceof Error) {
      logger.warn(`Skipping identity file ${path}: wrong passphrase ${PROMPT_TRIES} times`);
      trace.locked.push({ path, why: 'wrong-passphrase' });
      return undefined;
    }
  }
  if (parsed instanceof Error) {
    logger.warn(`Skipping identity file ${path}: ${parsed.message}`);
    return undefined;
  }
  const key = Array.isArray(parsed) ? parsed[0] : parsed;
  if (!key || !key.isPrivateKey()) {
    logger.warn(`Skipping identity file ${path}: not a private key`);
    return undefined;
  }
  secrets.keys.set(path, key);
  return key;
}
