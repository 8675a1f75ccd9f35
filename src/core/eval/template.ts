/**
 * Template substitution for eval profiles.
 *
 * How a `command` template is read: it is POSIX `sh` text the user wrote (pipes, `&&`, redirections are theirs to
 * use). Each `${name}` placeholder is replaced by the value run through `shellQuote`, so it becomes exactly ONE
 * shell word whatever it holds (`;`, `&&`, `$()`, backticks, quotes, newlines). Because the value arrives already
 * quoted, a placeholder must stand outside quotes: `--ckpt=${checkpoint}` or `${checkpoint}/model.pt` are fine
 * (still one word); `"${checkpoint}"` or `'${checkpoint}'` are rejected with a message saying so, since the quotes
 * would become part of the value. `$${` writes a literal `${` for the shell's own variables (`$${HOME}` → `${HOME}`);
 * `$HOME` without braces needs no escape. A `${…}` that is not one of the known names is a `bad-config` error naming it.
 *
 * `cwd`, `env` values and `sbatch` options are not shell text: they are single argv words, so placeholders there
 * are substituted literally (no quoting), with the same names, escape and errors.
 */
import { RemoteRunsError } from '../types';
import { shellQuote } from '../shell/quote';
import type { TemplateValues } from './types';

/** Every name a template may use. */
export const TEMPLATE_VARIABLES = ['checkpoint', 'localCheckpoint', 'run', 'runPath', 'step', 'host', 'target'] as const;
export type TemplateVariable = (typeof TEMPLATE_VARIABLES)[number];

const KNOWN = new Set<string>(TEMPLATE_VARIABLES);

/** A placeholder or an escaped `$${`, found by scan(). */
interface Token {
  start: number;
  end: number;
  /** undefined for the `$${` escape. */
  name?: string;
  /** The quoting context the placeholder stands in. */
  quoted: 'none' | 'single' | 'double';
}

/**
 * Find placeholders with the shell quoting context each stands in. `shell` false treats the text as a plain word
 * (no quoting context at all).
 */
function scan(text: string, field: string, shell: boolean): Token[] {
  const tokens: Token[] = [];
  let state: 'none' | 'single' | 'double' = 'none';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '$' && text[i + 1] === '$' && text[i + 2] === '{') {
      tokens.push({ start: i, end: i + 2, quoted: state });
      i += 1;
      continue;
    }
    if (c === '$' && text[i + 1] === '{') {
      i = placeholder(i);
      continue;
    }
    if (!shell) continue;
    if (state === 'single') {
      if (c === "'") state = 'none';
    } else if (c === '\\') {
      i++; // the escaped character is literal to the shell, and so to us
    } else if (c === "'" && state === 'none') {
      state = 'single';
    } else if (c === '"') {
      state = state === 'double' ? 'none' : 'double';
    }
  }
  return tokens;

  function placeholder(i: number): number {
    const close = text.indexOf('}', i + 2);
    if (close < 0) {
      throw new RemoteRunsError('bad-config', `${field}: "\${" at character ${i + 1} is not closed with "}" (write $\${ for a literal \${)`, {
        field,
      });
    }
    const name = text.slice(i + 2, close);
    if (!KNOWN.has(name)) {
      throw new RemoteRunsError(
        'bad-config',
        `${field}: unknown variable \${${name}} (known: ${TEMPLATE_VARIABLES.map((v) => `\${${v}}`).join(', ')}; ` +
          `write $\${${name}} to pass \${${name}} to the shell)`,
        { field, variable: name },
      );
    }
    tokens.push({ start: i, end: close + 1, name, quoted: state });
    return close;
  }
}

/** The placeholder names a template uses, in order of first use (e.g. to know a download is needed first). */
export function templateVariables(text: string, options: { shell?: boolean; field?: string } = {}): TemplateVariable[] {
  const names: TemplateVariable[] = [];
  for (const t of scan(text, options.field ?? 'template', options.shell ?? true)) {
    if (t.name && !names.includes(t.name as TemplateVariable)) names.push(t.name as TemplateVariable);
  }
  return names;
}

/** Throw bad-config if the text is not a valid template (unknown name, unclosed, quoted placeholder). */
export function checkTemplate(text: string, field: string, shell: boolean): void {
  for (const t of scan(text, field, shell)) {
    if (t.name && t.quoted !== 'none') throw quotedError(field, t.name, t.quoted);
  }
}

/**
 * Substitute a `command` template: each placeholder becomes one shell-quoted word. Throws bad-config for an
 * unknown or quoted placeholder, or for one whose value is not known (`localCheckpoint` before a download).
 */
export function renderCommand(template: string, values: TemplateValues, field = 'command'): string {
  return render(template, values, field, true);
}

/** Substitute a non-shell field (cwd, env value, sbatch option): placeholders become the raw value. */
export function renderLiteral(text: string, values: TemplateValues, field: string): string {
  return render(text, values, field, false);
}

function render(text: string, values: TemplateValues, field: string, shell: boolean): string {
  let out = '';
  let at = 0;
  for (const t of scan(text, field, shell)) {
    out += text.slice(at, t.start);
    at = t.end;
    if (!t.name) {
      out += '$';
      continue;
    }
    if (shell && t.quoted !== 'none') throw quotedError(field, t.name, t.quoted);
    const value = values[t.name as TemplateVariable];
    if (value === undefined) {
      throw new RemoteRunsError(
        'bad-config',
        t.name === 'localCheckpoint'
          ? `${field}: uses \${localCheckpoint}, which is only known once the checkpoint has been downloaded`
          : `${field}: no value for \${${t.name}}`,
        { field, variable: t.name },
      );
    }
    out += shell ? shellQuote(String(value)) : String(value);
  }
  return out + text.slice(at);
}

function quotedError(field: string, name: string, quoted: 'single' | 'double' | 'none'): RemoteRunsError {
  return new RemoteRunsError(
    'bad-config',
    `${field}: \${${name}} stands inside ${quoted} quotes; write it without quotes, its value is quoted for you as one word`,
    { field, variable: name },
  );
}
