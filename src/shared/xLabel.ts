/**
 * The word for the x of a run's progress, from RunFeed.xAxis: its x field (`step`, `epoch`), `line` for line
 * numbers, `x` when the run's logs use different ones. Shared by the status bar and the webview's header.
 */
export function xLabel(xAxis: string | undefined): string {
  if (xAxis === undefined) return 'step';
  if (xAxis.startsWith('line number') || xAxis.startsWith('entry number')) return 'line';
  return /[(,]/.test(xAxis) ? 'x' : xAxis;
}
