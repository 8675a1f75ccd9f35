/**
 * LSP answers built from a document's analysis: diagnostics, hover, document links and code actions. Completion
 * is in completion.ts. Commands in links and actions are the extension's own ids (LspCommands).
 */
import type { InspectSummaryParams } from '../shared/lspProtocol';
import {
  CodeActionKind,
  DiagnosticSeverity,
  MarkupKind,
  type CodeAction,
  type Diagnostic,
  type DocumentLink,
  type Hover,
  type Range,
} from 'vscode-languageserver';
import type { TextDocument } from 'vscode-languageserver-textdocument';
import { parseTarget, type Checkpoint, type Run } from '../core/types';
import { toRunRef } from '../core/runRef';
import { LspCommands, formatPlace, type Place } from '../shared/lspProtocol';
import type { RunRefWire } from '../shared/metricsProtocol';
import type { Analysis } from './analysis';
import type { DocumentResult, RefResult } from './documentAnalysis';
import { MAX_LINE } from './finder';
import { fallbackHint, hoverOf, problemOf } from './messages';
import { mdCode, mdText } from './markdown';
import { displayName, hasUnsafe } from '../shared/display';

export const SOURCE = 'Remote Runs';

export function rangeOf(doc: TextDocument, start: number, end: number): Range {
  return { start: doc.positionAt(start), end: doc.positionAt(end) };
}

/** Diagnostics: references that match nothing (warning, saying what is there), and fallbacks that hide why (info). */
export function diagnosticsOf(doc: TextDocument, result: DocumentResult): Diagnostic[] {
  return [...diagnosticSteps(doc, result)];
}

/** diagnosticsOf one at a time, for a caller that gives the event loop turns in between (thousands of references). */
export function* diagnosticSteps(doc: TextDocument, result: DocumentResult): Generator<Diagnostic, void, void> {
  for (const r of result.refs) {
    const problem = r.analysis ? problemOf(r.analysis) : undefined;
    if (!problem) continue;
    yield {
      range: rangeOf(doc, r.ref.start, r.ref.end),
      severity: problem.severity === 'warning' ? DiagnosticSeverity.Warning : DiagnosticSeverity.Information,
      source: SOURCE,
      code: r.analysis?.kind === 'glob' ? 'glob-matches-nothing' : r.analysis?.kind === 'missing' ? 'path-missing' : 'cannot-check',
      message: problem.message,
    };
  }
  const byFallback = new Map<number, RefResult>();
  for (const r of result.refs) if (r.ref.fallback && !byFallback.has(r.ref.fallback.start)) byFallback.set(r.ref.fallback.start, r);
  for (const f of result.fallbacks) {
    const nearby = byFallback.get(f.start)?.analysis;
    yield {
      range: rangeOf(doc, f.start, f.end),
      severity: DiagnosticSeverity.Information,
      source: SOURCE,
      code: 'fallback-hides-failures',
      message: fallbackHint(f, nearby),
    };
  }
  // What was not checked is said, never left out in silence.
  if (result.capped) {
    const line = doc.positionAt(result.capped.next.start).line + 1;
    yield {
      range: rangeOf(doc, result.capped.next.start, result.capped.next.end),
      severity: DiagnosticSeverity.Information,
      source: SOURCE,
      code: 'analysis-capped',
      message: `Remote Runs checks the first ${count(result.capped.cap)} remote paths of a file: the ones from line ${count(line)} on are not checked here (hover one to check it)`,
    };
  }
  if (result.longLines) {
    const { count: n, first } = result.longLines;
    yield {
      range: rangeOf(doc, first.start, first.end),
      severity: DiagnosticSeverity.Information,
      source: SOURCE,
      code: 'long-lines-skipped',
      message: `Remote Runs does not look for remote paths in lines over ${count(MAX_LINE)} characters: ${n === 1 ? 'this line is one' : `${count(n)} lines are, this is the first`} (hover a path on one to check it)`,
    };
  }
}

function count(n: number): string {
  return n.toLocaleString('en-US');
}

/** Hover over a reference: what is there, on which place. */
export function hoverFor(doc: TextDocument, r: RefResult, extra?: string): Hover | undefined {
  let value: string;
  if (r.analysis) {
    // Undefined: the diagnostic VS Code shows in the same hover says it all.
    const parts = [hoverOf(r.analysis), extra].filter((p): p is string => p !== undefined && p !== '');
    if (parts.length === 0) return undefined;
    value = parts.join('\n\n');
  }
  else if (r.unknownHost) value = `${mdCode(r.ref.path)} is on ${mdCode(r.unknownHost)}, which is not a configured host (remoteRuns.hosts or ~/.ssh/config)`;
  else if (r.ambiguous) value = `${mdCode(r.ref.path)} exists on ${r.ambiguous.map((p) => mdText(formatPlace(p))).join(', ')}: add a \`# remote-runs: host/target\` comment or a \`remoteRuns.pathMappings\` entry to say which`;
  else value = `${mdCode(r.ref.path)} was not found on any connected host: open its host in the Remote Runs tree, or add a \`# remote-runs: host/target\` comment`;
  return { contents: { kind: MarkupKind.Markdown, value }, range: rangeOf(doc, r.ref.start, r.ref.end) };
}

/** The run (and checkpoint) a reference is in or next to, as the commands take them. */
export function runOf(a: Analysis | undefined): { place: Place; run: Run; checkpoint?: Checkpoint } | undefined {
  if (!a) return undefined;
  if (a.kind === 'exists' && a.context) return { place: a.place, run: a.context.run, ...(a.context.checkpoint ? { checkpoint: a.context.checkpoint } : {}) };
  if ((a.kind === 'glob' || a.kind === 'missing') && a.latest) return { place: a.place, run: a.latest.run, checkpoint: a.latest.checkpoint };
  return undefined;
}

export function runRefOf(place: Place, run: Run): RunRefWire {
  return toRunRef(place.host, parseTarget(place.target), run);
}

/** Document links: a path in a run or checkpoint reveals it in the Remote Runs tree. */
export function linksOf(doc: TextDocument, result: DocumentResult): DocumentLink[] {
  const out: DocumentLink[] = [];
  for (const r of result.refs) {
    if (r.analysis?.kind !== 'exists' || !r.analysis.context) continue;
    const { run, checkpoint } = r.analysis.context;
    const args = [runRefOf(r.analysis.place, run), checkpoint?.step ?? null];
    out.push({
      range: rangeOf(doc, r.ref.start, r.ref.end),
      target: `command:${LspCommands.revealInTree}?${encodeURIComponent(JSON.stringify(args))}`,
      tooltip: `Reveal ${checkpoint ? `checkpoint ${displayName(checkpoint.name)}` : `run ${displayName(run.name)}`} in the Remote Runs tree`,
    });
  }
  return out;
}

/** Code actions for the references in `range`: replace with the latest checkpoint, reveal, download, open metrics. */
export function actionsOf(doc: TextDocument, result: DocumentResult, range: Range, diagnostics: readonly Diagnostic[]): CodeAction[] {
  const from = doc.offsetAt(range.start);
  const to = doc.offsetAt(range.end);
  const out: CodeAction[] = [];
  for (const r of result.refs) {
    if (r.ref.end < from || r.ref.start > to || !r.analysis) continue;
    const a = r.analysis;
    const refRange = rangeOf(doc, r.ref.start, r.ref.end);
    // A replacement is written into the document as it is: never one holding a control or bidi character.
    if ((a.kind === 'glob' || a.kind === 'missing') && a.latest && a.latest.replacement !== r.ref.path && !hasUnsafe(a.latest.replacement) && problemOf(a)) {
      out.push({
        title: `Replace with the latest checkpoint's path (${displayName(a.latest.checkpoint.name)})`,
        kind: CodeActionKind.QuickFix,
        isPreferred: true,
        diagnostics: diagnostics.filter((d) => d.range.start.line === refRange.start.line && d.range.start.character === refRange.start.character),
        edit: { changes: { [doc.uri]: [{ range: refRange, newText: a.latest.replacement }] } },
      });
    }
    const target = runOf(a);
    if (!target) continue;
    const runRef = runRefOf(target.place, target.run);
    out.push({
      title: `Reveal ${displayName(target.checkpoint ? target.checkpoint.name : target.run.name)} in the Remote Runs tree`,
      kind: CodeActionKind.Empty,
      command: { title: 'Reveal in Remote Runs', command: LspCommands.revealInTree, arguments: [runRef, target.checkpoint?.step ?? null] },
    });
    if (target.checkpoint) {
      const node = { type: 'checkpoint', id: '', hostName: target.place.host, target: parseTarget(target.place.target), run: target.run, checkpoint: target.checkpoint };
      out.push({
        title: `Download checkpoint ${displayName(target.checkpoint.name)}`,
        kind: CodeActionKind.Empty,
        command: { title: 'Download Checkpoint', command: LspCommands.downloadCheckpoint, arguments: [node] },
      });
    }
    if (target.run.metrics.length) {
      out.push({
        title: `Open metrics of run ${displayName(target.run.name)}`,
        kind: CodeActionKind.Empty,
        command: { title: 'Open Metrics', command: LspCommands.openMetrics, arguments: [runRef] },
      });
    }
  }
  return out;
}

/** The JSONL log whose last values a hover over a run shows, when the reference is the run itself. */
export function runLogOf(r: RefResult): { place: Place; path: string } | undefined {
  const a = r.analysis;
  if (a?.kind !== 'exists' || !a.context || a.context.run.path !== a.entry.path) return undefined;
  const log = a.context.run.metrics.find((m) => m.endsWith('.jsonl'));
  return log ? { place: a.place, path: log } : undefined;
}

/** The checkpoint a hover shows the contents of, when the reference is the checkpoint itself (its folder or file). */
export function checkpointRefOf(r: RefResult): InspectSummaryParams | undefined {
  const a = r.analysis;
  const c = a?.kind === 'exists' ? a.context?.checkpoint : undefined;
  if (!a || a.kind !== 'exists' || !c || c.path !== a.entry.path) return undefined;
  return { place: a.place, checkpoint: { path: c.path, isDir: c.isDir, bytes: c.bytes, mtime: c.mtime, files: c.files.map((f) => ({ name: f.name, path: f.path, bytes: f.bytes, mtime: f.mtime })) } };
}

/** "latest (step 21760): loss 0.86 · acc 0.25", as hover markdown (the keys are the remote log's own). */
export function latestLine(step: number | undefined, values: Record<string, number>): string | undefined {
  const entries = Object.entries(values).slice(0, 8);
  if (entries.length === 0) return undefined;
  const fmt = (v: number): string => (Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4))));
  return `latest${step !== undefined ? ` (step ${step})` : ''}: ${entries.map(([k, v]) => `${mdText(k)} ${fmt(v)}`).join(' · ')}`;
}
