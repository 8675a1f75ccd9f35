/**
 * The names writers give TensorBoard logdirs by default, and where a run's event folders are named from.
 *
 * Hugging Face Trainer's `logging_dir` defaults to `<output_dir>/runs/<%b%d_%H-%M-%S>_<hostname>`
 * (transformers/training_args.py, `default_logdir`: "Same default as PyTorch"), and torch's SummaryWriter without a
 * log_dir writes `runs/<%b%d_%H-%M-%S>_<hostname><comment>` (torch/utils/tensorboard/writer.py,
 * `SummaryWriter.__init__`). A new process picks a new time, so a Trainer resumed with `resume_from_checkpoint`
 * into the same output_dir writes a second `runs/<time>_<host>/`: both folders are one stream of that run.
 */
import { LOG_CONTAINERS, RUN_LOG_CONTAINERS } from './checkpointLayout';

/**
 * `Dec03_16-11-14_vm` (and `Dec03_16-11-14_vmexp1` with a SummaryWriter comment): `%b` is the month's abbreviation
 * in the C locale, and the hostname is anything after the second `_`.
 */
export const DEFAULT_LOGDIR = /^[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_.+$/;

/** Is this folder name one a Trainer or a SummaryWriter gives a logdir by default? */
export function isDefaultLogdirName(name: string): boolean {
  return DEFAULT_LOGDIR.test(name);
}

/**
 * The stream an event folder of a run belongs to, as a path below the run's fixed home ('' for the home itself):
 * `folder`'s path below `runPath`, without a leading `logs/` (LOG_CONTAINERS) and without a leading
 * `runs/<default logdir>/` (RUN_LOG_CONTAINERS holding default-named logdirs: one stream however many processes
 * wrote it). It depends on the folder's path alone, never on which other logs exist, so a series keeps its name when
 * another log appears. A folder outside the run keeps its whole path.
 */
export function eventStreamOf(runPath: string, folder: string): string {
  const home = runPath === '/' ? '' : runPath;
  let rel: string;
  if (folder === home || (home === '' && folder === '/')) rel = '';
  else if (folder.startsWith(`${home}/`)) rel = folder.slice(home.length + 1);
  else return folder;
  let parts = rel === '' ? [] : rel.split('/');
  if (parts.length > 0 && LOG_CONTAINERS.includes(parts[0])) parts = parts.slice(1);
  if (parts.length > 1 && RUN_LOG_CONTAINERS.includes(parts[0]) && isDefaultLogdirName(parts[1])) parts = parts.slice(2);
  return parts.join('/');
}
