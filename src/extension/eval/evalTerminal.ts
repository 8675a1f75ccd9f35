/**
 * A VS Code terminal showing one eval's log: a Pseudoterminal fed by EvalService.follow from the log's start, so a
 * terminal opened after a reload shows everything the eval printed, then follows. The eval itself runs detached on
 * its target: closing the terminal only stops following (and offers to stop the eval while it runs).
 */
import { StringDecoder } from 'node:string_decoder';
import * as vscode from 'vscode';
import { isRemoteRunsError } from '../../core/types';
import { LogLineEnds, displayText } from '../../shared/display';
import type { EvalService, EvalFollowEnd } from '../../core/eval/service';
import type { EvalMeta, EvalPlace } from '../../core/eval/types';
import { formatResult } from './decoration';
import type { Logger } from '../log';

export interface EvalTerminalOptions {
  evals: EvalService;
  place: EvalPlace;
  id: string;
  meta: Pick<EvalMeta, 'resultPattern' | 'profile' | 'checkpoint'>;
  /** Terminal title, e.g. `eval step_20000 · acceptance`. */
  name: string;
  log: Logger;
  /** The follower ended (the eval ended and all its log was shown). */
  onEnded(end: EvalFollowEnd): void;
  /** The user closed the terminal while the eval was still running, or pressed Ctrl-C in it. */
  onStopRequested(): void;
  /** A Slurm eval's queue state changed (PENDING → RUNNING …): the tree should list its state again. */
  onQueueState?(state: string): void;
  pollMs?: number;
}

/** Terminal text: LF → CRLF (a pty shows a bare LF as a line feed without carriage return). */
/**
 * The remote log's text as it may reach the terminal: no control or bidi character of it raw (shared/display.ts;
 * a log's CRLF and a progress bar's bare CR are line ends, LogLineEnds). Only the terminal's own frame lines (the
 * end, the Slurm state) use escape sequences.
 */
function shown(text: string): string {
  return displayText(text);
}

function toTerminal(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}

export class EvalTerminal implements vscode.Disposable {
  readonly terminal: vscode.Terminal;
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  private readonly controller = new AbortController();
  private ended = false;
  private disposed = false;

  constructor(private readonly options: EvalTerminalOptions) {
    const pty: vscode.Pseudoterminal = {
      onDidWrite: this.writeEmitter.event,
      open: () => void this.follow(),
      close: () => this.closed(),
      handleInput: (data) => {
        if (data === '\x03' && !this.ended) options.onStopRequested();
      },
    };
    this.terminal = vscode.window.createTerminal({ name: options.name, pty, iconPath: new vscode.ThemeIcon('beaker') });
  }

  /** Whether the follower saw the eval end. */
  get hasEnded(): boolean {
    return this.ended;
  }

  private async follow(): Promise<void> {
    const { evals, place, id, meta, log } = this.options;
    const decoder = new StringDecoder('utf8');
    const lineEnds = new LogLineEnds();
    let lastByte = 0x0a;
    let queueState: string | undefined;
    try {
      const end = await evals.follow(place, id, meta, {
        pollMs: this.options.pollMs ?? 1000,
        signal: this.controller.signal,
        onData: (chunk) => {
          if (chunk.length) lastByte = chunk[chunk.length - 1]!;
          this.writeEmitter.fire(toTerminal(shown(lineEnds.push(decoder.write(chunk)))));
        },
        onRetry: (e) => log.warn(`eval ${id}: ${e.kind}: ${e.message}; following again`),
        onPoll: (h) => {
          // A queued job prints nothing while it waits: say where it is in the queue, once per change.
          if (!h.slurmState || h.slurmState === queueState) return;
          queueState = h.slurmState;
          if (lastByte !== 0x0a) this.writeEmitter.fire('\r\n');
          this.writeEmitter.fire(`\x1b[2m── Slurm job ${queueState.toLowerCase().replace(/_/g, ' ')}\x1b[0m\r\n`);
          lastByte = 0x0a;
          this.options.onQueueState?.(queueState);
        },
      });
      this.ended = true;
      const rest = shown(lineEnds.push(decoder.end()) + lineEnds.end());
      const values = shown(end.results.map(formatResult).filter(Boolean).join('; '));
      const how = end.state === 'passed' ? '✓ passed' : end.state === 'lost' ? '✗ lost (no exit status was recorded)' : `✗ failed${end.exitCode !== undefined ? ` with exit ${end.exitCode}` : ''}`;
      this.writeEmitter.fire(toTerminal(`${rest}${lastByte === 0x0a && !rest ? '' : '\n'}\x1b[1m── eval ${how}${values ? `: ${values}` : ''}\x1b[0m\n`));
      this.options.onEnded(end);
    } catch (e) {
      if (isRemoteRunsError(e) && e.kind === 'cancelled') return;
      const message = e instanceof Error ? e.message : String(e);
      log.error(`eval ${id}: following failed: ${message}`);
      this.writeEmitter.fire(toTerminal(`\n\x1b[31m── following the eval failed: ${shown(message)}\x1b[0m\n`));
    }
  }

  private closed(): void {
    this.controller.abort();
    // Closed by the user (not by our own dispose) while the eval runs on: ask whether to stop it too.
    if (!this.ended && !this.disposed) this.options.onStopRequested();
  }

  dispose(): void {
    this.disposed = true;
    this.controller.abort();
    this.terminal.dispose();
    this.writeEmitter.dispose();
  }
}
