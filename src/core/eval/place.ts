/**
 * Names and places of eval folders. An eval id is made of safe characters only (it is a folder name on machines we
 * do not control, and appears in terminals and CLI output): UTC time, profile, step and a random suffix so two
 * launches in the same second never collide.
 */
import { createHash, randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { formatTarget } from '../types';
import type { EvalPlace, EvalProfile, EvalRunRef } from './types';

/** The folder, under a run, that the extension owns. */
export const RUN_EVALS_DIR = '.remote-runs/evals';

/** The characters an eval id (and a run key) may hold. */
export const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** A filesystem- and shell-safe slug of a name (lower case, runs of other characters become one `-`). */
export function slug(name: string, max = 40): string {
  const s = name
    .toLowerCase()
    .replace(/[^a-z0-9._]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, max)
    .replace(/[-.]+$/, '');
  return s || 'eval';
}

/** A new eval id: `20250130-142003-acceptance-step20000-a3f9`. */
export function newEvalId(profile: string, step: number, now: Date = new Date(), random: string = randomBytes(2).toString('hex')): string {
  const t = now.toISOString(); // 2025-01-30T14:20:03.123Z
  const stamp = `${t.slice(0, 4)}${t.slice(5, 7)}${t.slice(8, 10)}-${t.slice(11, 13)}${t.slice(14, 16)}${t.slice(17, 19)}`;
  return `${stamp}-${slug(profile)}-step${Math.trunc(step)}-${random}`;
}

/** Whether a string is a well-formed eval id (what the listing accepts as a folder of ours). */
export function isEvalId(s: string): boolean {
  return SAFE_ID.test(s) && s.length <= 200;
}

/**
 * A stable, safe folder name for a run seen from somewhere else (another host or this machine): readable parts plus a
 * hash of the full identity, so two runs with the same name on different targets never share a folder.
 */
export function runKey(subject: EvalRunRef): string {
  const identity = `${subject.host}/${formatTarget(subject.target)}/${subject.run.path}`;
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, 12);
  return `${slug(subject.host, 30)}-${slug(formatTarget(subject.target), 30)}-${slug(subject.run.name, 40)}-${hash}`;
}

/**
 * Where a profile's evals of a subject live:
 * - `target`: `<runPath>/.remote-runs/evals` in the run's own target (beside the run, shared by all who open it);
 * - another host/target: `~/.remote-runs/evals/<runKey>` there;
 * - `local`: `<localStateDir>/evals/<runKey>` on this machine.
 */
export function evalPlace(profile: Pick<EvalProfile, 'where'>, subject: EvalRunRef, localStateDir: string): EvalPlace {
  switch (profile.where.kind) {
    case 'target':
      return { kind: 'remote', host: subject.host, target: subject.target, evalsDir: joinRemote(subject.run.path, RUN_EVALS_DIR) };
    case 'remote':
      return { kind: 'remote', host: profile.where.host, target: profile.where.target, evalsDir: `~/${RUN_EVALS_DIR}/${runKey(subject)}` };
    case 'local':
      return { kind: 'local', evalsDir: path.join(localStateDir, 'evals', runKey(subject)) };
  }
}

/** Every distinct place the given profiles put evals of a subject (the run's own place first). */
export function evalPlaces(profiles: readonly Pick<EvalProfile, 'where'>[], subject: EvalRunRef, localStateDir: string): EvalPlace[] {
  const places = [evalPlace({ where: { kind: 'target' } }, subject, localStateDir)];
  for (const p of profiles) {
    const place = evalPlace(p, subject, localStateDir);
    if (!places.some((q) => samePlace(q, place))) places.push(place);
  }
  return places;
}

export function samePlace(a: EvalPlace, b: EvalPlace): boolean {
  if (a.kind !== b.kind || a.evalsDir !== b.evalsDir) return false;
  if (a.kind === 'remote' && b.kind === 'remote') return a.host === b.host && formatTarget(a.target) === formatTarget(b.target);
  return true;
}

/** The folder of one eval. */
export function evalDir(place: EvalPlace, id: string): string {
  return place.kind === 'local' ? path.join(place.evalsDir, id) : joinRemote(place.evalsDir, id);
}

function joinRemote(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}
