/**
 * chart.js, registered with only what the line charts use (the bundle tree-shakes the rest). chart.js is an
 * ES module package; the webview bundle (esbuild, browser) imports it as such. The repository's node-side
 * tsconfig (module Node16) type-checks this file too and would call that import a CommonJS require, which it
 * never is: hence the ts-ignore on that one line (tsconfig.webview.json, with bundler resolution, needs none).
 */
// @ts-ignore TS1479 under the node tsconfig only; see above.
import { Chart, LinearScale, LineController, LineElement, LogarithmicScale, PointElement } from 'chart.js';

Chart.register(LineController, LineElement, PointElement, LinearScale, LogarithmicScale);

export { Chart };
// @ts-ignore TS1479 under the node tsconfig only; see above.
export type { ChartDataset, Plugin, Scale } from 'chart.js';
