/**
 * One followed metrics file: parser, RunMetrics and tail state together, so the extension only loops
 * `runCommand(follower.nextCommand())` → `follower.apply(result)` (again at once while `more`).
 */
import type { RemoteCommand } from '../remote';
import { createParser, tailModeOf, unitOf } from './format';
import type { MetricsFormat, MetricsParser } from './parser';
import { RunMetrics } from './series';
import {
  applyTailRead,
  DEFAULT_TAIL_MAX_BYTES,
  nextTailRequest,
  tailReadCommand,
  type TailDecision,
  type TailMode,
  type TailReadResult,
  type TailState,
} from './tail';

export interface FollowUpdate {
  /** `ok`, or why the file could not be read (the metrics keep what they had). */
  status: TailReadResult['status'];
  decision?: TailDecision;
  /** metrics.revision moved: send the view a new snapshot. */
  changed: boolean;
  /** Poll again now. */
  more: boolean;
}

export class MetricsFollower {
  readonly metrics: RunMetrics;
  readonly mode: TailMode;
  private parser: MetricsParser;
  private tail: TailState | undefined;

  constructor(
    readonly path: string,
    readonly format: MetricsFormat,
    private readonly maxBytes = DEFAULT_TAIL_MAX_BYTES,
  ) {
    this.metrics = new RunMetrics(unitOf(format));
    this.mode = tailModeOf(format);
    this.parser = createParser(format, this.metrics);
  }

  /** What the last poll saw, for status lines (undefined before the first). */
  get state(): TailState | undefined {
    return this.tail;
  }

  nextCommand(): RemoteCommand<TailReadResult> {
    return tailReadCommand(this.path, nextTailRequest(this.tail, this.mode, this.maxBytes));
  }

  apply(result: TailReadResult): FollowUpdate {
    return this.advance(result).parse();
  }

  /**
   * Take a read's place in the file now (so `nextCommand()` already asks for what follows) and parse its bytes
   * when `parse()` is called: a caller reading a long backlog sends the next read before parsing this one, so
   * the transfer of one chunk overlaps the parsing of the previous. Call `parse()` before the next `advance()`.
   */
  advance(result: TailReadResult): { more: boolean; parse(): FollowUpdate } {
    if (result.status !== 'ok') {
      const update: FollowUpdate = { status: result.status, changed: false, more: false };
      return { more: false, parse: () => update };
    }
    const step = applyTailRead(this.tail, result, this.mode);
    this.tail = step.state;
    return {
      more: step.more,
      parse: () => {
        const before = this.metrics.revision;
        if (step.reset) {
          // A whole-file parser replaces the data itself once the new text parses; until then the old curve stays.
          if (this.mode === 'append') this.metrics.reset();
          this.parser = createParser(this.format, this.metrics);
        }
        if (step.data.length > 0) this.parser.push(step.data);
        if (step.complete) this.parser.end();
        return { status: 'ok', decision: step.decision, changed: this.metrics.revision !== before, more: step.more };
      },
    };
  }
}
