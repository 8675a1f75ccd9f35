/** Command ids in one place; mirrors `contributes.commands` in package.json (a unit test checks both ways). */
export const CommandIds = {
  refresh: 'remoteRuns.refresh',
  addHost: 'remoteRuns.addHost',
  useSshConfigHosts: 'remoteRuns.useSshConfigHosts',
  openSettings: 'remoteRuns.openSettings',
  showLog: 'remoteRuns.showLog',
  copyRemotePath: 'remoteRuns.copyRemotePath',
  openTerminal: 'remoteRuns.openTerminal',
  retry: 'remoteRuns.retry',
  downloadCheckpoint: 'remoteRuns.downloadCheckpoint',
  downloadLatestCheckpoint: 'remoteRuns.downloadLatestCheckpoint',
  openMetrics: 'remoteRuns.openMetrics',
  addRunToMetrics: 'remoteRuns.addRunToMetrics',
  pinRun: 'remoteRuns.pinRun',
  unpinRun: 'remoteRuns.unpinRun',
  showInlineMetrics: 'remoteRuns.showInlineMetrics',
  evaluateCheckpoint: 'remoteRuns.evaluateCheckpoint',
  stopEval: 'remoteRuns.stopEval',
  showEvalResults: 'remoteRuns.showEvalResults',
  compareCheckpoints: 'remoteRuns.compareCheckpoints',
  revealInTree: 'remoteRuns.revealInTree',
  tryDemoHost: 'remoteRuns.tryDemoHost',
  stopDemoHost: 'remoteRuns.stopDemoHost',
  evaluateCheckpointsSince: 'remoteRuns.evaluateCheckpointsSince',
  showRunTable: 'remoteRuns.showRunTable',
} as const;

export type CommandId = (typeof CommandIds)[keyof typeof CommandIds];
