// One build for every entry point: the extension (node/cjs, `vscode` external) and the headless CLI,
// both over the same core, and the metrics webview (browser/iife). Later entries are added to `entries` below.
import * as esbuild from 'esbuild';

const production = process.argv.includes('--production');
const watch = process.argv.includes('--watch');

/** @type {esbuild.BuildOptions[]} */
const entries = [
  {
    entryPoints: { extension: 'src/extension/extension.ts' },
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['vscode'],
  },
  {
    entryPoints: { cli: 'src/cli/main.ts' },
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    banner: { js: '#!/usr/bin/env node' },
  },
  {
    // A download's worker threads (one SSH connection and lane each), loaded by src/core/transfer/workerLane.ts
    // from beside the extension and CLI bundles.
    entryPoints: { transferWorker: 'src/core/transfer/transferWorker.ts' },
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    // The parse worker of a long metrics backlog (src/core/metrics/formats/parseWorker.ts), loaded by parseOffload.ts from
    // beside the extension and CLI bundles.
    entryPoints: { metricsWorker: 'src/core/metrics/formats/parseWorker.ts' },
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
  {
    // The metrics webview (panel and inline view): browser code with chart.js bundled in, one file under the
    // webview's strict CSP (no eval, no inline script). Its types are checked by tsconfig.webview.json (run by the test command, test/run-all.sh).
    entryPoints: { webview: 'src/webview/main.ts' },
    platform: 'browser',
    format: 'iife',
    target: 'es2022',
    tsconfig: 'tsconfig.webview.json',
  },
  {
    // The language server (src/lsp): its own node process started by the extension's language client over IPC.
    // Pure core code only: it never opens SSH, it asks the extension (src/shared/lspProtocol.ts).
    entryPoints: { lspServer: 'src/lsp/server.ts' },
    platform: 'node',
    format: 'cjs',
    target: 'node20',
  },
];

const common = {
  bundle: true,
  outdir: 'dist',
  sourcemap: production ? false : 'linked',
  minify: production,
  logLevel: 'info',
  // ssh2 optionally loads a native crypto binding and cpu-features; a bundle ships pure JS.
  external: ['cpu-features', './crypto/build/Release/sshcrypto.node'],
};

const contexts = await Promise.all(
  entries.map((e) => esbuild.context({ ...common, ...e, external: [...common.external, ...(e.external ?? [])] })),
);
if (watch) {
  await Promise.all(contexts.map((c) => c.watch()));
} else {
  await Promise.all(contexts.map((c) => c.rebuild()));
  await Promise.all(contexts.map((c) => c.dispose()));
}
