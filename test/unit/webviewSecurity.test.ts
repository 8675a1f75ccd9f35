/**
 * Webview security (issue 8), held for every webview the extension has, not just the one we know of today:
 * - every place that creates or resolves a webview, sets its HTML or options, or listens to its messages is found
 *   by scanning src/, and each must go through the one setup (webviewSetup.ts), the one HTML builder (html.ts)
 *   and the one message validator (validate.ts); a new webview that bypasses them fails here, naming its file;
 * - the HTML builder's page has a strict CSP (`default-src 'none'`, scripts by nonce only, no unsafe-*) whatever
 *   strings it is given, and those strings cannot break out of their attributes;
 * - `localResourceRoots` is exactly dist/ and media/, command URIs are off;
 * - the webview bundle never turns strings into markup or code (no innerHTML, eval, new Function…);
 * - any message a webview can post (fc.anything) is either rejected or comes out typed and bounded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { contentSecurityPolicy, metricsHtml } from '../../src/extension/metrics/html';
import { parseFromWebview, parseRestoreState } from '../../src/extension/metrics/validate';

const ROOT = path.resolve(__dirname, '../..');
const SRC = path.join(ROOT, 'src');

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? sourceFiles(p) : /\.tsx?$/.test(d.name) ? [p] : [];
  });
}
const files = sourceFiles(SRC).map((p) => ({ rel: path.relative(ROOT, p), text: fs.readFileSync(p, 'utf8') }));
const withText = (re: RegExp) => files.filter((f) => re.test(f.text));

test('every webview panel is created with the shared options (scripts from dist/ and media/ only)', () => {
  const creators = withText(/createWebviewPanel\s*\(/);
  assert.ok(creators.length > 0, 'no createWebviewPanel found: the scan is looking in the wrong place');
  for (const f of creators) {
    const calls = f.text.split(/createWebviewPanel\s*\(/).slice(1);
    for (const call of calls) assert.match(call.slice(0, 400), /\.\.\.webviewOptions\(/, `${f.rel}: a webview panel created without webviewOptions()`);
  }
});

test('every resolved or restored webview gets its HTML from setupWebview, and only webviewSetup.ts sets HTML or options', () => {
  for (const f of withText(/resolveWebviewView\s*\(|deserializeWebviewPanel/)) {
    assert.match(f.text, /setupWebview\(/, `${f.rel}: resolves or restores a webview without setupWebview()`);
  }
  const htmlSetters = withText(/\.html\s*=[^=]/).map((f) => f.rel);
  assert.deepEqual(htmlSetters, ['src/extension/metrics/webviewSetup.ts'], 'webview HTML set outside webviewSetup.ts');
  const optionSetters = withText(/localResourceRoots|\.options\s*=[^=]|enableScripts/).map((f) => f.rel);
  assert.deepEqual(optionSetters, ['src/extension/metrics/webviewSetup.ts'], 'webview options set outside webviewSetup.ts');
  const setup = files.find((f) => f.rel === 'src/extension/metrics/webviewSetup.ts')!.text;
  assert.match(setup, /webview\.html = metricsHtml\(/);
  // Exactly the bundle's folder and media/, nothing else (not the extension root, not the workspace).
  const roots = /localResourceRoots:\s*\[([^\]]*)\]/.exec(setup)?.[1] ?? '';
  assert.deepEqual(
    [...roots.matchAll(/joinPath\(extensionUri,\s*'([^']+)'\)/g)].map((m) => m[1]).sort(),
    ['dist', 'media'],
    `localResourceRoots is ${roots}`,
  );
  assert.equal(roots.replace(/joinPath\(extensionUri,\s*'(dist|media)'\)/g, '').replace(/vscode\.Uri\.|[\s,]/g, ''), '', `localResourceRoots is ${roots}`);
  assert.match(setup, /enableCommandUris:\s*false/);
});

test('every listener of webview messages validates them with parseFromWebview (or its page\'s own parse…FromWebview) before use', () => {
  const listeners = withText(/onDidReceiveMessage/);
  assert.ok(listeners.length > 0);
  for (const f of listeners) {
    const handler = /onDidReceiveMessage\(\(?(\w+)\)?\s*=>\s*(?:void\s+)?this\.(\w+)\(\1\)/.exec(f.text);
    assert.ok(handler, `${f.rel}: a message listener that is not a plain call of one method`);
    const body = new RegExp(`private async ${handler[2]}\\(raw: unknown\\)[^{]*\\{\\s*const msg = parse\\w*FromWebview\\(raw\\);\\s*if \\(!msg\\)`).exec(f.text);
    assert.ok(body, `${f.rel}: ${handler[2]}() does not start by validating with parseFromWebview`);
  }
});

test('the webview bundle never turns strings into markup or code', () => {
  const web = files.filter((f) => f.rel.startsWith('src/webview/'));
  assert.ok(web.length > 0);
  for (const f of web) {
    for (const bad of [/\.innerHTML\b/, /\.outerHTML\b/, /insertAdjacentHTML/, /document\.write/, /\beval\(/, /new Function\(/, /setTimeout\(\s*['"`]/, /\.setAttribute\(\s*['"]on/, /DOMParser/, /createContextualFragment/]) {
      assert.doesNotMatch(f.text, bad, `${f.rel} uses ${bad}`);
    }
  }
});

/** Tags of an HTML page, in order, with their attributes as written. */
function tags(html: string): { name: string; attrs: string }[] {
  return [...html.matchAll(/<([a-zA-Z!][\w-]*)([^>]*)>/g)].map((m) => ({ name: m[1].toLowerCase(), attrs: m[2] }));
}

test('the HTML builder: strict CSP, nonce on every script, and hostile strings stay inside their attributes', () => {
  const hostile = fc.oneof(
    fc.constantFrom('"><script>alert(1)</script>', "' onload='x", 'https://x/a"b', 'vscode-resource: *', "'unsafe-inline'", '&quot;><img src=x onerror=alert(1)>'),
    fc.string({ maxLength: 30 }),
  );
  fc.assert(
    fc.property(hostile, hostile, hostile, fc.constantFrom('panel' as const, 'inline' as const), (cspSource, scriptUri, styleUri, mode) => {
      const html = metricsHtml({ cspSource, scriptUri, styleUri, mode, nonce: 'NONCE123' });
      const t = tags(html);
      assert.deepEqual(
        t.map((x) => x.name),
        ['!doctype', 'html', 'head', 'meta', 'meta', 'meta', 'link', 'title', 'body', 'div', 'script'],
        'a string changed the page structure',
      );
      const csp = t[4].attrs;
      assert.match(csp, /^ http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-NONCE123'; /);
      for (const s of t.filter((x) => x.name === 'script')) assert.match(s.attrs, /^ nonce="NONCE123" src="/);
      assert.equal(html.match(/<\/script>/g)?.length, 1);
    }),
    { numRuns: 300 },
  );
  for (const nonceless of [metricsHtml({ cspSource: 'vscode-webview://a', scriptUri: 's', styleUri: 'c', mode: 'panel' }), metricsHtml({ cspSource: 'vscode-webview://a', scriptUri: 's', styleUri: 'c', mode: 'panel' })]) {
    const nonce = /'nonce-([^']+)'/.exec(nonceless)?.[1] ?? '';
    assert.ok(Buffer.from(nonce, 'base64').length >= 16, `nonce ${nonce} is shorter than 128 bits`);
    assert.match(nonceless, new RegExp(`<script nonce="${nonce.replace(/[+/]/g, '\\$&')}"`));
  }
  const a = /'nonce-([^']+)'/.exec(metricsHtml({ cspSource: 'x', scriptUri: 's', styleUri: 'c', mode: 'panel' }))?.[1];
  const b = /'nonce-([^']+)'/.exec(metricsHtml({ cspSource: 'x', scriptUri: 's', styleUri: 'c', mode: 'panel' }))?.[1];
  assert.notEqual(a, b, 'the nonce is the same on two pages');
  const csp = contentSecurityPolicy('vscode-webview://a', 'n');
  for (const directive of csp.split('; ')) assert.doesNotMatch(directive, /unsafe|\*|https?:|blob:|'self'/, directive);
  assert.doesNotMatch(csp, /connect-src|frame-src|child-src|worker-src/, 'the page may connect or frame nothing');
});

test('any message a webview posts is rejected or comes out typed: finite numbers, short strings, known types only', () => {
  const msg = fc.oneof(
    fc.anything({ withObjectString: true, withNullPrototype: true, withMap: true, withTypedArray: true, withSparseArray: true }),
    fc.record(
      {
        type: fc.constantFrom('ready', 'view', 'hover', 'selectCheckpoint', 'addRun', 'openPanel', 'removeRun', 'setReferenceRun', 'addReferenceLine', 'removeReferenceLine', 'compare', '__proto__', 'constructor', 'toString'),
        width: fc.oneof(fc.double(), fc.integer(), fc.string()),
        range: fc.oneof(fc.constant(null), fc.record({ xMin: fc.double(), xMax: fc.double() }), fc.anything()),
        smoothing: fc.oneof(fc.double(), fc.string()),
        hidden: fc.oneof(fc.array(fc.oneof(fc.string({ maxLength: 600 }), fc.integer())), fc.anything()),
        seq: fc.oneof(fc.double(), fc.integer()),
        x: fc.double(),
        step: fc.oneof(fc.double(), fc.string()),
        runKey: fc.oneof(fc.string({ maxLength: 600 }), fc.constant(null), fc.integer()),
        metric: fc.string({ maxLength: 600 }),
        value: fc.oneof(fc.double(), fc.string()),
        label: fc.string({ maxLength: 600 }),
        source: fc.string({ maxLength: 600 }),
        id: fc.string({ maxLength: 600 }),
        action: fc.oneof(fc.constantFrom('swap', 'changeB', 'retry', 'toString'), fc.string(), fc.integer()),
      },
      { requiredKeys: ['type'] },
    ),
  );
  const known = new Set(['ready', 'view', 'hover', 'selectCheckpoint', 'addRun', 'openPanel', 'removeRun', 'setReferenceRun', 'addReferenceLine', 'removeReferenceLine', 'compare']);
  fc.assert(
    fc.property(msg, (m) => {
      const out = parseFromWebview(m);
      parseRestoreState(m);
      if (out === undefined) return;
      assert.ok(known.has(out.type), `type ${out.type}`);
      const check = (v: unknown, at: string): void => {
        if (typeof v === 'number') assert.ok(Number.isFinite(v), `${at} = ${v}`);
        else if (typeof v === 'string') assert.ok(v.length <= 500, `${at} is ${v.length} characters`);
        else if (Array.isArray(v)) v.forEach((x, i) => check(x, `${at}[${i}]`));
        else if (v !== null && typeof v === 'object') {
          assert.equal(Object.getPrototypeOf(v), Object.prototype, `${at} is not a plain object`);
          for (const [k, x] of Object.entries(v)) check(x, `${at}.${k}`);
        } else assert.ok(v === null || v === undefined, `${at} is a ${typeof v}`);
      };
      check(out, 'message');
    }),
    { numRuns: 1000 },
  );
});
