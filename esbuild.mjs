// One build for every entry point: the extension (node/cjs, `vscode` external) and the headless CLI,
// both over the same core. Later entries (webview, language server) are added to `entries` below.
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
