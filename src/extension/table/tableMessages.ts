/**
 * Messages from the run table page are untrusted input like every webview's: checked here before the extension acts
 * on them; anything malformed is dropped. Pure: no `vscode`.
 */
import type { RunTableFromWebview } from '../../shared/tableProtocol';

export function parseRunTableFromWebview(msg: unknown): RunTableFromWebview | undefined {
  if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return undefined;
  const m = msg as Record<string, unknown>;
  switch (m.type) {
    case 'copyRunTable':
      return m.format === 'csv' || m.format === 'markdown' ? { type: 'copyRunTable', format: m.format } : undefined;
    case 'refreshRunTable':
      return { type: 'refreshRunTable' };
    default:
      return undefined;
  }
}
