import { readFileSync } from 'node:fs';
import * as path from 'node:path';

/**
 * A settings file VS Code writes, parsed; read again while VS Code is halfway through writing it (it was seen empty,
 * which failed a test with "Unexpected end of JSON input").
 */
export function readSettingsFile(file: string): Record<string, unknown> {
  for (let attempt = 0; ; attempt++) {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (e) {
      if (attempt >= 100) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    }
  }
}

/** The user settings of a test VS Code whose root folder is `root`. */
export function userSettingsOf(root: string): Record<string, unknown> {
  return readSettingsFile(path.join(root, 'user-data', 'User', 'settings.json'));
}

/** The remote (Machine) settings of a test VS Code: where `machine`-scoped settings live in code-server. */
export function machineSettingsFileOf(root: string): string {
  return path.join(root, 'user-data', 'Machine', 'settings.json');
}

/** The remote (Machine) settings of a test VS Code, parsed; `{}` while VS Code has written none. */
export function machineSettingsOf(root: string): Record<string, unknown> {
  try {
    return readSettingsFile(machineSettingsFileOf(root));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw e;
  }
}
