import * as readline from 'node:readline';
import type { HostKeyInfo, Prompter } from '../core/ssh/types';
import { displayText } from '../shared/display';
import { rawStream } from './output';

/**
 * Terminal prompts for the CLI. Without a TTY nothing can be asked: an unknown host key is refused and no
 * secret is invented, so scripts fail with a clear error kind instead of hanging.
 */
export class TerminalPrompter implements Prompter {
  constructor(
    private readonly input: NodeJS.ReadStream = process.stdin,
    private readonly output: NodeJS.WriteStream = process.stderr,
  ) {}

  private get interactive(): boolean {
    return Boolean(this.input.isTTY);
  }

  async confirmHostKey(info: HostKeyInfo): Promise<boolean> {
    if (!this.interactive) {
      this.output.write(`remote-runs: unknown host key for ${info.hostPattern} (${info.keyType} ${info.fingerprint}); not trusted without a terminal to ask\n`);
      return false;
    }
    const a = await this.ask(
      `The authenticity of host '${info.hostPattern}' can't be established.\n${info.keyType} key fingerprint is ${info.fingerprint}.\nAdd it to ${info.knownHostsFile} and connect (yes/no)? `,
      false,
    );
    return a?.trim().toLowerCase() === 'yes';
  }

  passphrase(keyPath: string): Promise<string | undefined> {
    return this.interactive ? this.ask(`Enter passphrase for key '${keyPath}': `, true) : Promise.resolve(undefined);
  }

  password(user: string, host: string): Promise<string | undefined> {
    return this.interactive ? this.ask(`${user}@${host}'s password: `, true) : Promise.resolve(undefined);
  }

  async keyboardInteractive(user: string, host: string, name: string, instructions: string, prompts: { prompt: string; echo: boolean }[]): Promise<string[] | undefined> {
    if (!this.interactive) return undefined;
    if (name || instructions) this.output.write(`${[name, instructions].filter(Boolean).join('\n')}\n`);
    const answers: string[] = [];
    for (const p of prompts) {
      const a = await this.ask(p.prompt, !p.echo);
      if (a === undefined) return undefined;
      answers.push(a);
    }
    return answers;
  }

  private ask(prompt: string, hidden: boolean): Promise<string | undefined> {
    // The prompt may come from the server (keyboard-interactive): shown through the display function, while readline
    // draws its line with controls of its own on the raw stream under it.
    const question = displayText(prompt);
    const raw = rawStream(this.output);
    return new Promise((resolve) => {
      const rl = readline.createInterface({ input: this.input, output: raw, terminal: true });
      if (hidden) {
        // Echo nothing while the secret is typed.
        (rl as unknown as { _writeToOutput: (s: string) => void })._writeToOutput = (s: string) => {
          if (s.includes(question)) raw.write(question);
        };
      }
      let answered = false;
      rl.question(question, (a) => {
        answered = true;
        if (hidden) this.output.write('\n');
        rl.close();
        resolve(a);
      });
      rl.on('close', () => {
        if (!answered) resolve(undefined);
      });
    });
  }
}
