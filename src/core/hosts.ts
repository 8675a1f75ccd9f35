/**
 * The hosts a user can browse: those configured (setting or --config file) plus, when asked, the concrete
 * `Host` entries of ~/.ssh/config. Resolves each to the hops OpenSSH would use.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { isIP } from 'node:net';
import type { HostConfig } from './types';
import { closestName } from './util/closest';
import type { ResolvedHost } from './ssh/types';
import { configuredHostAliases, loadSshConfig, resolveHost, type SshConfig } from './ssh/sshConfig';

export interface HostEntry {
  config: HostConfig;
  source: 'settings' | 'ssh-config';
}

export interface HostDirectoryOptions {
  hosts: () => HostConfig[];
  /** Told once per (re)load about lines of the ssh config that were skipped, and why. */
  onSshConfigProblems?: (problems: string[]) => void;
  /** Offer ~/.ssh/config's concrete hosts too. */
  includeSshConfigHosts: () => boolean;
  /** Default ~/.ssh/config. */
  sshConfigPath?: () => string | undefined;
  home?: string;
  localUser?: string;
}

export class HostDirectory {
  private cached: { path: string; config: SshConfig } | undefined;

  constructor(private readonly options: HostDirectoryOptions) {}

  get home(): string {
    return this.options.home ?? os.homedir();
  }

  /** The file named in the settings or on the command line (then it must exist, as for `ssh -F`), else ~/.ssh/config. */
  private get sshConfigPath(): { path: string; explicit: boolean } {
    const named = this.options.sshConfigPath?.();
    return named ? { path: named, explicit: true } : { path: path.join(this.home, '.ssh', 'config'), explicit: false };
  }

  /** The ssh config, re-read when its path changes or `invalidate()` is called. */
  sshConfig(): SshConfig {
    const { path: p, explicit } = this.sshConfigPath;
    if (!this.cached || this.cached.path !== p) {
      this.cached = { path: p, config: loadSshConfig(p, { home: this.home, explicit }) };
      if (this.cached.config.problems.length) this.options.onSshConfigProblems?.(this.cached.config.problems);
    }
    return this.cached.config;
  }

  invalidate(): void {
    this.cached = undefined;
  }

  /** Configured hosts first, then ssh-config aliases not already configured under the same name or host. */
  all(): HostEntry[] {
    const configured = this.options.hosts().map((config): HostEntry => ({ config, source: 'settings' }));
    if (!this.options.includeSshConfigHosts()) return configured;
    const taken = new Set(configured.flatMap((h) => [h.config.name, h.config.host]));
    const extra = configuredHostAliases(this.sshConfig())
      .filter((alias) => !taken.has(alias))
      .map((alias): HostEntry => ({ config: { name: alias, host: alias }, source: 'ssh-config' }));
    return [...configured, ...extra];
  }

  configs(): HostConfig[] {
    return this.all().map((h) => h.config);
  }

  resolve(host: HostConfig): ResolvedHost & { name: string } {
    const config = this.sshConfig();
    const resolved = resolveHost(host, config, { home: this.home, localUser: this.options.localUser ?? safeUser() });
    const aliases = configuredHostAliases(config);
    // A name the ssh config gave no HostName and that no Host line names: DNS is its last chance, and a typo of a
    // configured name is the likelier cause when that fails.
    if (resolved.target.hostname === host.host.toLowerCase() && !aliases.includes(host.host) && !isIpAddress(host.host)) {
      const names = [...new Set([...this.options.hosts().map((h) => h.name), ...aliases])];
      const closest = closestName(host.host, names.filter((n) => n !== host.name));
      resolved.target.unconfigured = closest ? { closest } : {};
    }
    return { ...resolved, name: host.name };
  }
}

function isIpAddress(h: string): boolean {
  return isIP(h) !== 0;
}

function safeUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER ?? 'root';
  }
}
