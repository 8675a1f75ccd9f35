/**
 * Messages of the table pages (the eval table, the run table: src/extension/table/tablePage.ts). Types only:
 * imported by the extension and written by the page's one nonce script. The eval table's own copy message is in
 * metricsProtocol.ts (`copyEvalTable`), where it was first; the run table's is here.
 */
import type { EvalTableToWebview } from './metricsProtocol';

export type CopyFormat = 'csv' | 'markdown';

/** Run table page → extension. Validated on arrival (parseRunTableFromWebview). */
export type RunTableFromWebview =
  /** Put the table on the clipboard. */
  | { type: 'copyRunTable'; format: CopyFormat }
  /** List the target's runs again (configs and metrics read anew). */
  | { type: 'refreshRunTable' };

/** Extension → a table page: the copy is on the clipboard. */
export type TableToWebview = EvalTableToWebview;

/** What a table page's copy buttons post. */
export type TableCopyMessageType = 'copyEvalTable' | 'copyRunTable';
