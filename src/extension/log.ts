import type * as vscode from 'vscode';

/** What the core and the views log through. Secrets never reach it (callers pass none; `censor` is a last guard). */
export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const SECRET_PATTERNS: RegExp[] = [
  /(password|passphrase|passwd|token|secret)(["']?\s*[:=]\s*)("[^"]*"|'[^']*'|\S+)/gi,
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
];

/** Masks anything that looks like a secret assignment or a private key block. */
export function censor(message: string): string {
  let out = message;
  out = out.replace(SECRET_PATTERNS[0], (_m, k: string, sep: string) => `${k}${sep}***`);
  out = out.replace(SECRET_PATTERNS[1], '[private key removed]');
  return out;
}

export function channelLogger(channel: vscode.LogOutputChannel): Logger {
  return {
    info: (m) => channel.info(censor(m)),
    warn: (m) => channel.warn(censor(m)),
    error: (m) => channel.error(censor(m)),
  };
}
