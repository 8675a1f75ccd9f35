/**
 * "Try the demo host" inside VS Code: the embedded demo training host (src/demo) started in the extension host on
 * 127.0.0.1, with its keys and machine under the extension's global storage, and put into the user settings so the
 * tree shows it. Stopping it (the command, or the extension's deactivation) ends every process it started and takes
 * its settings out again.
 *
 * Why user (global) settings, not workspace ones: the welcome view also shows with no folder open, where a workspace
 * setting cannot be written; the demo's key and known_hosts live in the extension's per-user storage, not in a
 * project; and Add Host writes there too. What is written is only the host entry and the known_hosts file (both
 * recognised by paths under that storage) and the demo's two eval profiles (each by its exact name and what it runs: the
 * command, or the drafter server's URL), and removed when the demo stops (or, if VS Code went away before that
 * could finish, at the next activation when no window runs the demo any more).
 *
 * The eval profiles are the one thing a user may have too (an identical one written earlier by `npm run demo`, or
 * copied): it is removed only when this demo added it. What a start adds is recorded in `added.json` in the demo's
 * folder *before* the settings are written (synchronously), so a crash between the two leaves a record of an
 * addition that may not have happened (removing a profile that is not there does nothing), never an addition
 * without a record (which would be left behind, or be taken for the user's). A start that finds a record of an
 * earlier one keeps its claim: the identical profile it finds then is that earlier start's, not the user's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DemoHost } from '../../demo/demoHost';
import { demoEvalProfile, demoServerEvalProfile } from '../../demo/evalProfile';
import { demoPaths, type DemoPaths } from '../../demo/paths';
import type { HostConfig } from '../../core/types';
import type { Logger } from '../log';
import {
  addsDemoEvalProfile,
  parseDemoAdditions,
  type DemoAdditions,
  evalProfilesWithDemo,
  evalProfilesWithoutDemo,
  hostsWithDemo,
  hostsWithoutDemo,
  isDemoEvalProfile,
  isDemoHostEntry,
  knownHostsWithDemo,
  knownHostsWithoutDemo,
} from './demoSettingsEdit';
import { setUserSetting, userSetting } from '../settings';

/** The demo's eval profiles (the command one, the drafter server's), each under its key of the additions record. */
const DEMO_PROFILES: readonly { key: keyof DemoAdditions; profile: Readonly<Record<string, unknown>> }[] = [
  { key: 'evalProfile', profile: demoEvalProfile() },
  { key: 'serverProfile', profile: demoServerEvalProfile() },
];
/** The running demo as the command reports it. */
export interface RunningDemo {
  /** The name the host got in `remoteRuns.hosts` (`demo`, unless the user already has a host of that name). */
  name: string;
  port: number;
}

/** Owns the demo host of this window (at most one). Register it: disposing stops the demo. */
export class DemoHostController implements vscode.Disposable {
  readonly paths: DemoPaths;
  private host: DemoHost | undefined;
  private running: RunningDemo | undefined;
  private starting: Promise<RunningDemo> | undefined;
  private disposed = false;
  private readonly onDidChangeEmitter = new vscode.EventEmitter<RunningDemo | undefined>();
  /** Fires with the running demo after a start, and with `undefined` after a stop. */
  readonly onDidChange = this.onDidChangeEmitter.event;

  constructor(
    /** The demo's folder: keys (kept between starts), machine tree, known_hosts. */
    base: string,
    private readonly log: Logger,
  ) {
    this.paths = demoPaths(base);
  }

  /** The demo this window runs, if any. */
  get current(): RunningDemo | undefined {
    return this.running;
  }

  /** Start the demo host (once; a second call returns the running one) and add it to the settings. */
  start(): Promise<RunningDemo> {
    if (this.running) return Promise.resolve(this.running);
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<RunningDemo> {
    const other = demoOfAnotherWindow(this.paths.stateFile);
    if (other) {
      throw new Error(`The demo host already runs in another VS Code window (127.0.0.1:${other.port}); it is in your hosts there and here.`);
    }
    // Loaded on first use only: nothing of the demo server runs at activation.
    const { startDemoHost } = await import('../../demo/demoHost.js');
    const host = await startDemoHost({ base: this.paths.base, log: (line) => this.log.info(`demo host: ${line}`) });
    if (this.disposed) {
      await host.stop();
      throw new Error('The extension stopped while the demo host was starting');
    }
    this.host = host;
    fs.writeFileSync(this.paths.stateFile, JSON.stringify({ pid: process.pid, port: host.port }));
    try {
      const name = await this.addToSettings(host.hostConfig, host.paths.knownHosts);
      this.running = { name, port: host.port };
    } catch (e) {
      await this.stop();
      throw e;
    }
    this.log.info(`demo host "${this.running.name}" running on 127.0.0.1:${host.port} (folder ${this.paths.base})`);
    this.onDidChangeEmitter.fire(this.running);
    return this.running;
  }

  /** Stop the demo host and every process in it, then take it out of the settings. Idempotent. */
  async stop(): Promise<void> {
    const host = this.host;
    this.host = undefined;
    this.running = undefined;
    if (!host) return;
    fs.rmSync(this.paths.stateFile, { force: true });
    await host.stop();
    this.log.info('demo host stopped');
    this.onDidChangeEmitter.fire(undefined);
    if (!this.disposed) await this.removeFromSettings();
  }

  /**
   * At activation: settings that still name the demo host while no window runs it (VS Code closed before the
   * settings could be cleaned) are taken out, so the tree never shows a demo host that cannot answer.
   */
  async removeStaleEntries(): Promise<void> {
    const hosts = userSetting<unknown[]>('hosts');
    if (!hosts?.some((h) => isDemoHostEntry(h, this.paths.clientKey))) return;
    if (this.host || demoOfAnotherWindow(this.paths.stateFile)) return;
    this.log.info('removing the demo host from the settings: no window runs it any more');
    await this.removeFromSettings();
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const host = this.host;
    if (host) {
      // Deactivation does not wait for promises: end the machine (every process in it) right now, synchronously
      // signalled, then the rest. Its settings are cleaned by the next activation (removeStaleEntries).
      void host.machine.stop();
      void this.stop().catch(() => undefined);
    }
    this.onDidChangeEmitter.dispose();
  }

  /** Adds the known_hosts file first, so the pool checks the demo's key by the time the tree lists the new host. */
  private async addToSettings(hostConfig: HostConfig, knownHosts: string): Promise<string> {
    const files = userSetting<string[]>('knownHostsFiles');
    await setUserSetting('knownHostsFiles', knownHostsWithDemo(files, knownHosts));
    const current = userSetting<unknown[]>('evalProfiles');
    // Recorded before it is written (see the file's comment); an earlier start's claim is kept.
    const before = this.readAdditions();
    const added = { ...before };
    for (const { key, profile } of DEMO_PROFILES) added[key] = before[key] || addsDemoEvalProfile(current, profile);
    this.writeAdditions(added);
    let profiles: unknown[] | undefined = current;
    for (const { profile } of DEMO_PROFILES) profiles = evalProfilesWithDemo(profiles, profile);
    await setUserSetting('evalProfiles', profiles);
    const hosts = hostsWithDemo(userSetting<unknown[]>('hosts'), hostConfig);
    await setUserSetting('hosts', hosts);
    return (hosts[hosts.length - 1] as HostConfig).name;
  }

  private async removeFromSettings(): Promise<void> {
    const hosts = userSetting<unknown[]>('hosts');
    if (hosts?.some((h) => isDemoHostEntry(h, this.paths.clientKey))) {
      await setUserSetting('hosts', hostsWithoutDemo(hosts, this.paths.clientKey));
    }
    const before = userSetting<unknown[]>('evalProfiles');
    const added = this.readAdditions();
    let profiles = before;
    for (const { key, profile } of DEMO_PROFILES) {
      if (!profiles?.some((p) => isDemoEvalProfile(p, profile))) continue;
      if (added[key]) profiles = evalProfilesWithoutDemo(profiles, profile);
      else this.log.info(`demo host: the eval profile ${JSON.stringify(profile.name)} was there before the demo started; it stays`);
    }
    if (profiles !== before) await setUserSetting('evalProfiles', profiles);
    const files = userSetting<string[]>('knownHostsFiles');
    if (files?.includes(this.paths.knownHosts)) {
      await setUserSetting('knownHostsFiles', knownHostsWithoutDemo(files, this.paths.knownHosts));
    }
    fs.rmSync(this.additionsFile, { force: true });
  }

  /** Where a start records what it added to the settings (see the file's comment). */
  private get additionsFile(): string {
    return path.join(this.paths.base, 'added.json');
  }

  private readAdditions(): DemoAdditions {
    let text: string | undefined;
    try {
      text = fs.readFileSync(this.additionsFile, 'utf8');
    } catch {
      text = undefined;
    }
    return parseDemoAdditions(text);
  }

  private writeAdditions(added: DemoAdditions): void {
    fs.mkdirSync(this.paths.base, { recursive: true });
    fs.writeFileSync(this.additionsFile, JSON.stringify(added));
  }
}

/** The demo started by another live process (another window's extension host), from its state file. */
function demoOfAnotherWindow(stateFile: string): { pid: number; port: number } | undefined {
  try {
    const state = JSON.parse(fs.readFileSync(stateFile, 'utf8')) as { pid: number; port: number };
    if (state.pid === process.pid) return undefined;
    process.kill(state.pid, 0);
    return state;
  } catch {
    return undefined;
  }
}
