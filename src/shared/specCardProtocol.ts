/**
 * Messages of the speculative-decoding card's page (src/extension/eval/specCardHtml.ts). Types only: imported by the
 * extension and written by the page's one nonce script.
 */

/** Card page → extension. Untrusted: validated on arrival (extension/eval/specCardMessages.ts parseSpecCardFromWebview). */
export type SpecCardFromWebview =
  /** The page is loaded (again, after it was hidden): send the card as it is now. */
  | { type: 'ready' }
  /** List the run's evals again (an eval recorded by the command line, or on another machine). */
  | { type: 'refresh' }
  /** A paper or reference row entered in the form: every input's text by its name (references.ts specRowFromForm). */
  | { type: 'saveRow'; kind: 'paper' | 'reference'; fields: Record<string, string> }
  /** Remove an entered row by its id (references.ts specRowIds). */
  | { type: 'removeRow'; id: string };

/** Extension → card page. */
export type SpecCardToWebview =
  /** The card section (tables, checklist, notes) as HTML the extension built and escaped; the form is left as it is. */
  | { type: 'card'; html: string }
  /** The row was not saved: each problem names its input (`field`: an input's name, or '' for the whole row). */
  | { type: 'formError'; problems: { field: string; message: string }[] }
  /** The row was saved: close the form. */
  | { type: 'saved' };
