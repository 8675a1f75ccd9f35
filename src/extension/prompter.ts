import * as vscode from 'vscode';
import type { HostKeyInfo, Prompter } from '../core/ssh/types';

/**
 * Asks the user through VS Code. Answers are handed straight to the SSH layer and never stored or logged;
 * the SSH layer asks once per connection.
 */
export class VSCodePrompter implements Prompter {
  async confirmHostKey(info: HostKeyInfo): Promise<boolean> {
    const trust = 'Trust and Connect';
    const answer = await vscode.window.showWarningMessage(
      `Remote Runs: the authenticity of host "${info.hostPattern}" can't be established.`,
      {
        modal: true,
        detail: `${info.keyType} key fingerprint is ${info.fingerprint}.\n\nIf you trust it, it will be added to ${info.knownHostsFile}.`,
      },
      trust,
    );
    return answer === trust;
  }

  passphrase(keyPath: string): Promise<string | undefined> {
    return Promise.resolve(
      vscode.window.showInputBox({
        title: 'Remote Runs: key passphrase',
        prompt: `Passphrase for ${keyPath} (kept in memory for this connection only)`,
        password: true,
        ignoreFocusOut: true,
      }),
    );
  }

  password(user: string, host: string): Promise<string | undefined> {
    return Promise.resolve(
      vscode.window.showInputBox({ title: 'Remote Runs: password', prompt: `Password for ${user}@${host}`, password: true, ignoreFocusOut: true }),
    );
  }

  async keyboardInteractive(
    user: string,
    host: string,
    name: string,
    instructions: string,
    prompts: { prompt: string; echo: boolean }[],
  ): Promise<string[] | undefined> {
    const answers: string[] = [];
    for (const p of prompts) {
      const a = await vscode.window.showInputBox({
        title: `Remote Runs: ${name || `${user}@${host}`}`,
        prompt: [instructions, p.prompt].filter(Boolean).join(' — '),
        password: !p.echo,
        ignoreFocusOut: true,
      });
      if (a === undefined) return undefined;
      answers.push(a);
    }
    return answers;
  }
}
