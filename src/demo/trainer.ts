/**
 * The live run: one JSONL line a second (LIVE_STEPS_PER_LINE steps of demo time each) and a new
 * `checkpoints/step_N/checkpoint.pt` (a real torch.save archive, see liveModelAt) whenever the step passes a multiple of LIVE_CHECKPOINT_EVERY (about every two
 * minutes of real time), so a newcomer watches the curves move and a checkpoint appear while the demo runs.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { metricsAt } from './metrics';
import { writeTorchCheckpoint } from './realCheckpoints';
import { LIVE_CHECKPOINT_EVERY, LIVE_START_STEP, LIVE_STEPS_PER_LINE, liveModelAt, metricLine } from './tree';

export interface LiveTrainerOptions {
  /** The run folder (holds `logs/train.jsonl` and `checkpoints/`). */
  dir: string;
  /** The step the log already reached. */
  startStep?: number;
  /** Real milliseconds between lines (default 1000). */
  intervalMs?: number;
  /** Called after a checkpoint was written. */
  onCheckpoint?: (step: number, file: string) => void;
}

/** Appends the live run's lines on a timer until stopped. */
export class LiveTrainer {
  private step: number;
  private timer: NodeJS.Timeout | undefined;
  private readonly log: string;

  constructor(private readonly options: LiveTrainerOptions) {
    this.step = options.startStep ?? LIVE_START_STEP;
    this.log = path.join(options.dir, 'logs', 'train.jsonl');
  }

  /** The last step logged. */
  get currentStep(): number {
    return this.step;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.options.intervalMs ?? 1000);
  }

  /** One line of training (and a checkpoint when one is due). Public so tests can drive it without waiting. */
  tick(nowMs: number = Date.now()): void {
    const previous = this.step;
    this.step += LIVE_STEPS_PER_LINE;
    fs.appendFileSync(this.log, metricLine(metricsAt(this.step, nowMs / 1000)));
    const due = Math.floor(this.step / LIVE_CHECKPOINT_EVERY) * LIVE_CHECKPOINT_EVERY;
    if (due > previous) {
      const file = path.join(this.options.dir, 'checkpoints', `step_${due}`, 'checkpoint.pt');
      writeTorchCheckpoint(file, liveModelAt(due));
      this.options.onCheckpoint?.(due, file);
    }
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
