/**
 * The webview's HTML: a strict Content Security Policy (nothing by default; scripts only with this page's
 * nonce; styles and fonts only from the extension's own resources; images from there or data: URIs for
 * chart.js's canvases; no 'unsafe-eval', no 'unsafe-inline'), the stylesheet from media/ and the bundle from
 * dist/. Pure: the caller passes the URIs as strings.
 */
import { randomBytes } from 'node:crypto';
import type { ViewMode } from '../../shared/metricsProtocol';

export interface HtmlParts {
  /** webview.cspSource */
  cspSource: string;
  scriptUri: string;
  styleUri: string;
  mode: ViewMode;
  nonce?: string;
}

/** A fresh nonce: 128 random bits, base64. */
export function makeNonce(): string {
  return randomBytes(16).toString('base64');
}

/** The Content-Security-Policy value for a page with this nonce. */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `script-src 'nonce-${nonce}'`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `img-src ${cspSource} data:`,
  ].join('; ');
}

const escapeAttr = (s: string): string => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/**
 * The start of every webview page of ours up to its body: the strict CSP (contentSecurityPolicy), the viewport, its
 * one stylesheet and its title.
 */
export function pageHead(page: { cspSource: string; nonce: string; styleUri: string; title: string }, escape: (s: string) => string = escapeAttr): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${escape(contentSecurityPolicy(page.cspSource, page.nonce))}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escape(page.styleUri)}">
<title>${escape(page.title)}</title>
</head>
`;
}

export function metricsHtml(parts: HtmlParts): string {
  const nonce = parts.nonce ?? makeNonce();
  return `${pageHead({ cspSource: parts.cspSource, nonce, styleUri: parts.styleUri, title: 'Metrics' })}<body data-mode="${parts.mode}">
<div id="app"></div>
<script nonce="${escapeAttr(nonce)}" src="${escapeAttr(parts.scriptUri)}"></script>
</body>
</html>`;
}
