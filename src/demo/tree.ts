/**
 * What the demo machine holds, written into its folder (see paths.ts) on every start. The checkpoints of the live,
 * the reference and the Hugging Face runs are small files in real formats (realCheckpoints.ts), so inspect, the hover
 * and Compare Checkpoints show real summaries; the story's folder and the stopped container keep big sparse files
 * (`truncate`: 3 GB checkpoints that cost no disk) for downloads. Outside path → path inside the demo machine:
 *
 *   root/runs/baseline-ref/                  /root/runs/baseline-ref       a finished reference run (story layout),
 *                                                                          each step_N/ a transformers sharded save
 *   root/checkpoints/step_N/checkpoint.pt    /root/checkpoints             the story's folder: 12 step_N/ folders,
 *                                                                          not one *.pt at its top level, no logs
 *   var/lib/lxc/200/rootfs/workspace/        pct:200 (trainer-ct) /workspace: the LIVE run (checkpoints/step_N/
 *                                                                          checkpoint.pt torch.save archives,
 *                                                                          logs/train.jsonl), grown by LiveTrainer
 *   var/lib/lxc/201/                         pct:201 (old-ct), stopped
 *   var/lib/docker/containers/hf-finetune/   docker:hf-finetune /workspace/llama-sft: a Hugging Face Trainer run
 *   var/lib/docker/containers/eval-old/      docker:eval-old, exited
 *   opt/remote-runs-demo/                    pct, docker and the eval script
 *
 *   workspace/                               /workspace on the host: code and data, no run, so its listing says
 *                                                                          "no runs recognised" and names what it saw
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { metricsAt, type DemoMetricLine } from './metrics';
import { writeShardedCheckpoint, writeTorchCheckpoint, writeTrainerCheckpoint, type TorchModel } from './realCheckpoints';
import { DEMO_BIN, DEMO_EVAL, DOCKER_SCRIPT, DOCKER_STATE, EVAL_SCRIPT, PCT_SCRIPT, PCT_STATE } from './scripts';

const GB = 1024 ** 3;

/** The live run's pace: steps per logged line (one line a second) and steps between checkpoints. */
export const LIVE_STEPS_PER_LINE = 16;
export const LIVE_CHECKPOINT_EVERY = 2000;
/** Where the live run stands when the demo starts (the story's step 21,760). */
export const LIVE_START_STEP = 21_760;
/** Apparent size of each (sparse) checkpoint of the story's folder. */
export const STORY_CHECKPOINT_BYTES = Math.round(3.2 * GB);
/**
 * The live run's model: its checkpoints before this step are the base architecture, from it on the edited one (a
 * third layer, a bigger vocabulary, no rope buffer, one norm in fp16), so comparing across it shows every kind of
 * difference and comparing two newer ones shows none.
 */
export const LIVE_EDITED_FROM_STEP = 12_000;

/** Which torch.save archive the live run's checkpoint at `step` is. */
export function liveModelAt(step: number): TorchModel {
  return step < LIVE_EDITED_FROM_STEP ? 'base' : 'edited';
}

/** Paths of the demo content, outside (real) and inside (as the demo machine's commands see them). */
export interface DemoTree {
  machine: string;
  live: { dir: string; log: string; checkpoints: string; inside: string; target: string };
  reference: { dir: string; inside: string };
  storyFolder: { dir: string; inside: string; steps: number[] };
  hf: { dir: string; inside: string; target: string };
}

/** A path inside the demo machine (`/var/lib/lxc/200`) as a real path under `machine`. */
export function outside(machine: string, inside: string): string {
  return path.join(machine, ...inside.split('/').filter(Boolean));
}

/**
 * Rewrite the whole demo machine under `machine` as of `nowMs` (the live run's history ends at LIVE_START_STEP,
 * its last line logged just now). Removes what a previous start left, except keys (kept elsewhere).
 */
export function writeDemoTree(machine: string, nowMs: number = Date.now()): DemoTree {
  fs.rmSync(machine, { recursive: true, force: true });
  fs.mkdirSync(machine, { recursive: true });
  fs.mkdirSync(path.join(machine, 'tmp'), { mode: 0o1777 });
  fs.chmodSync(path.join(machine, 'tmp'), 0o1777);

  writeExecutable(outside(machine, `${DEMO_BIN}/pct`), PCT_SCRIPT);
  writeExecutable(outside(machine, `${DEMO_BIN}/docker`), DOCKER_SCRIPT);
  writeExecutable(outside(machine, DEMO_EVAL), EVAL_SCRIPT);

  const home = outside(machine, '/root');
  fs.mkdirSync(home, { recursive: true, mode: 0o700 });
  fs.writeFileSync(path.join(home, '.profile'), 'PATH=/opt/remote-runs-demo/bin:$PATH\n');

  // The host's /workspace: code and data but no run (and the mount point the containers' /workspace goes on).
  const hostWorkspace = outside(machine, '/workspace');
  writeFile(path.join(hostWorkspace, 'README.md'), '# drafter experiments\nTraining runs live in the containers (pct 200) and in ~/runs.\n');
  writeFile(path.join(hostWorkspace, 'scripts', 'train.py'), 'import torch  # the demo does not run this\n');
  writeFile(path.join(hostWorkspace, 'scripts', 'launch.sh'), '#!/bin/sh\npct exec 200 -- python /workspace/train.py --config /workspace/config.yaml\n');
  sparseFile(path.join(hostWorkspace, 'datasets', 'prompts-200.parquet'), 18 * 1024 * 1024);

  // The finished reference run: 10 checkpoints, its log ended two days ago.
  const reference = path.join(home, 'runs', 'baseline-ref');
  writeStepRun(reference, { lastStep: 20_000, every: 2000, linesEvery: 20, endMs: nowMs - 2 * 86_400_000, seed: 5, write: (folder, _step, mtime) => writeShardedCheckpoint(folder, mtime) });

  // The story's folder: step_N/checkpoint.pt one level down, nothing a `*.pt` glob at its top would match.
  const storyDir = path.join(home, 'checkpoints');
  const storySteps: number[] = [];
  for (let step = 10_000; step <= 32_000; step += 2000) storySteps.push(step);
  storySteps.forEach((step, i) => {
    const mtime = nowMs - 3 * 86_400_000 + i * 40 * 60_000;
    sparseFile(path.join(storyDir, `step_${step}`, 'checkpoint.pt'), STORY_CHECKPOINT_BYTES, mtime);
    setMtime(path.join(storyDir, `step_${step}`), mtime);
  });

  // Proxmox: the live trainer in 200, a stopped old container in 201.
  const ct200 = outside(machine, `${PCT_STATE}/200`);
  writeFields(ct200, { state: 'running', name: 'trainer-ct' });
  const live = path.join(ct200, 'rootfs', 'workspace');
  writeStepRun(live, {
    lastStep: LIVE_START_STEP,
    every: LIVE_CHECKPOINT_EVERY,
    linesEvery: LIVE_STEPS_PER_LINE,
    endMs: nowMs,
    secondsPerLine: 1,
    seed: 0,
    write: (folder, step, mtime) => writeTorchCheckpoint(path.join(folder, 'checkpoint.pt'), liveModelAt(step), mtime),
  });
  fs.writeFileSync(
    path.join(live, 'config.yaml'),
    'run: v3-kpro6-ddtree-g10-b95\nmodel: drafter-1b\ntarget: Qwen3-27B\nbatch_size: 96\nlr: 3.0e-4\nwarmup_steps: 2000\nmax_steps: 60000\nsave_every: 2000\n',
  );
  fs.mkdirSync(path.join(ct200, 'rootfs', 'root'), { recursive: true, mode: 0o700 });
  const ct201 = outside(machine, `${PCT_STATE}/201`);
  writeFields(ct201, { state: 'stopped', name: 'old-ct' });
  writeStepRun(path.join(ct201, 'rootfs', 'workspace'), { lastStep: 6000, every: 2000, linesEvery: 50, endMs: nowMs - 20 * 86_400_000, seed: 9, write: (folder, _step, mtime) => sparseFile(path.join(folder, 'checkpoint.pt'), GB, mtime) });

  // Docker: a Hugging Face fine-tune, and an exited eval container.
  const hfCt = outside(machine, `${DOCKER_STATE}/hf-finetune`);
  writeFields(hfCt, { state: 'running', image: 'huggingface/transformers-pytorch-gpu:4.44.2', status: 'Up 5 hours' });
  const hf = path.join(hfCt, 'rootfs', 'workspace', 'llama-sft');
  writeHfRun(hf, [500, 1000, 1500, 2000], nowMs - 3 * 3600_000);
  fs.mkdirSync(path.join(hfCt, 'rootfs', 'root'), { recursive: true, mode: 0o700 });
  const evalOld = outside(machine, `${DOCKER_STATE}/eval-old`);
  writeFields(evalOld, { state: 'exited', image: 'pytorch/pytorch:2.4.0-cuda12.1-cudnn9-runtime', status: 'Exited (0) 2 days ago' });
  fs.mkdirSync(path.join(evalOld, 'rootfs', 'workspace'), { recursive: true });

  return {
    machine,
    live: { dir: live, log: path.join(live, 'logs', 'train.jsonl'), checkpoints: path.join(live, 'checkpoints'), inside: '/workspace', target: 'pct:200' },
    reference: { dir: reference, inside: '/root/runs/baseline-ref' },
    storyFolder: { dir: storyDir, inside: '/root/checkpoints', steps: storySteps },
    hf: { dir: hf, inside: '/workspace/llama-sft', target: 'docker:hf-finetune' },
  };
}

interface StepRunOptions {
  lastStep: number;
  every: number;
  /** Steps between logged lines. */
  linesEvery: number;
  /** When the last line was logged. */
  endMs: number;
  /** Wall seconds between lines (default: a believable 40 s per logged line). */
  secondsPerLine?: number;
  seed: number;
  /** Writes a checkpoint's files into its (existing) `step_N` folder, with this modification time. */
  write: (folder: string, step: number, mtimeMs: number) => void;
}

/** A `checkpoints/step_N/` folder every `every` steps and `logs/train.jsonl`, times consistent with the log. */
function writeStepRun(dir: string, o: StepRunOptions): void {
  const perLine = o.secondsPerLine ?? 40;
  const timeOf = (step: number): number => o.endMs / 1000 - ((o.lastStep - step) / o.linesEvery) * perLine;
  const lines: string[] = [];
  for (let step = o.linesEvery; step <= o.lastStep; step += o.linesEvery) lines.push(metricLine(metricsAt(step, timeOf(step), o.seed)));
  writeFile(path.join(dir, 'logs', 'train.jsonl'), lines.join(''), o.endMs);
  for (let step = o.every; step <= o.lastStep; step += o.every) {
    const folder = path.join(dir, 'checkpoints', `step_${step}`);
    fs.mkdirSync(folder, { recursive: true });
    o.write(folder, step, timeOf(step) * 1000);
    setMtime(folder, timeOf(step) * 1000);
  }
}

/** One JSONL line, newline included. */
export function metricLine(m: DemoMetricLine): string {
  return `${JSON.stringify(m)}\n`;
}

/**
 * A Hugging Face Trainer output folder: checkpoint-N/ with a real Trainer checkpoint's files (a tiny GPT-2's
 * model.safetensors, optimizer.pt, …) and this run's trainer_state.json.
 */
function writeHfRun(dir: string, steps: number[], endMs: number): void {
  const last = steps[steps.length - 1];
  const history = [] as { epoch: number; step: number; loss: number; learning_rate: number; grad_norm: number }[];
  for (let step = 25; step <= last; step += 25) {
    const m = metricsAt(step * 8, 0, 3);
    history.push({ epoch: Math.round((step / 1000) * 100) / 100, step, loss: m.loss, learning_rate: Number((m.lr / 10).toPrecision(4)), grad_norm: m.grad_norm });
  }
  steps.forEach((step, i) => {
    const mtime = endMs - (steps.length - 1 - i) * 45 * 60_000;
    const ck = path.join(dir, `checkpoint-${step}`);
    writeTrainerCheckpoint(ck, mtime);
    const state = { global_step: step, epoch: step / 1000, max_steps: 3000, best_metric: null, log_history: history.filter((h) => h.step <= step) };
    writeFile(path.join(ck, 'trainer_state.json'), JSON.stringify(state, null, 2), mtime);
    setMtime(ck, mtime);
  });
  writeFile(path.join(dir, 'README.md'), '---\nlibrary_name: transformers\nbase_model: meta-llama/Llama-3.2-1B\n---\n# llama-sft\n');
}

function writeFields(dir: string, fields: Record<string, string>): void {
  fs.mkdirSync(path.join(dir, 'rootfs'), { recursive: true });
  for (const [k, v] of Object.entries(fields)) fs.writeFileSync(path.join(dir, k), `${v}\n`);
}

function writeExecutable(file: string, text: string): void {
  writeFile(file, text);
  fs.chmodSync(file, 0o755);
}

/** A file of `bytes` apparent size that takes no disk space. */
export function sparseFile(file: string, bytes: number, mtimeMs?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, '');
  fs.truncateSync(file, Math.round(bytes));
  if (mtimeMs !== undefined) setMtime(file, mtimeMs);
}

function writeFile(file: string, content: string, mtimeMs?: number): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  if (mtimeMs !== undefined) setMtime(file, mtimeMs);
}

function setMtime(file: string, mtimeMs: number): void {
  const t = new Date(mtimeMs);
  fs.utimesSync(file, t, t);
}
