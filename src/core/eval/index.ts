/**
 * Evals of checkpoints: profiles and templates, detached launch (or Slurm), listing, following, stopping, results.
 * This folder never imports `vscode`.
 */
export * from './types';
export { EVAL_PROFILE_JSON_SCHEMA, parseEvalProfiles, parseEvalProfile, parseWhere } from './profiles';
export { TEMPLATE_VARIABLES, templateVariables, checkTemplate, renderCommand, renderLiteral, type TemplateVariable } from './template';
export { compileResultPattern, parseJsonResult, parsePatternResult, parseResultLine, parseResults, parseResultsFile, formatResultsFile } from './results';
export { RUN_EVALS_DIR, newEvalId, isEvalId, runKey, evalPlace, evalPlaces, samePlace, evalDir, slug } from './place';
export {
  launchEvalCommand,
  launchSlurmCommand,
  listEvalsCommand,
  readEvalLogCommand,
  stopEvalCommand,
  recordResultsCommand,
  DEFAULT_TAIL_BYTES,
  type LaunchSpec,
  type LaunchResult,
} from './commands';
export { parseEvalListing, parseEvalMeta, evalState, parseStatus, toEvalRecords, parseReadOutput, parseStopOutput, type RawEval, type ReadHeader, type StopReport } from './records';
export { followEval, isTransient, type FollowOptions, type FollowEnd } from './follow';
export { LocalExecutor } from './localExecutor';
export { usesLocalCheckpoint, downloadRootFor, localCheckpointState, requireLocalCheckpoint, type LocalCheckpointState } from './localCheckpoint';
export { buildEvalTable, evalTableCsv, evalTableMarkdown, latestValues, tableCells, type EvalTable, type EvalTableRow } from './table';
export { EvalService, type EvalServiceOptions, type StartedEval, type StopOptions, type EvalFollowOptions, type EvalFollowEnd } from './service';
export { runSpecServerEval, ENABLE_HINT, type RunSpecServerOptions, type SpecServerOutcome, type ServerEngine, type DraftSettings } from './spec/server/run';
export {
  SPEC_SERVER_KIND,
  SPEC_SERVER_DEFAULTS,
  SPEC_SERVER_PROFILE_JSON_SCHEMA,
  parseSpecServerProfile,
  parsePromptSet,
  readPromptSet,
  builtinPrompts,
  type SpecServerProfile,
  type SpecBaseline,
  type SpecPrompt,
  type PromptSet,
} from './spec/server/profile';
