/**
 * The CLI's writers: every byte of text output goes through displayStream (main.ts wraps stdout for text output and
 * stderr always), and long output through writeInSteps.
 */
import { StringDecoder } from 'node:string_decoder';
import { displayText } from '../shared/display';
import { RemoteRunsError } from '../core/types';

const RAW = Symbol('raw stream');

/**
 * `stream` with every write shown through displayText (shared/display.ts): no control or bidi character of a
 * remote name, key or file reaches the terminal raw, whichever message quotes it. Everything else (events, isTTY,
 * columns) is the stream's own. Bytes (an eval's log streamed through) are decoded as UTF-8 across writes first, so a
 * character split between two chunks stays one character.
 */
export function displayStream<S extends NodeJS.WritableStream>(stream: S): S {
  const decoder = new StringDecoder('utf8');
  const write = (chunk: unknown, ...rest: unknown[]): boolean => {
    const text = typeof chunk === 'string' ? chunk : decoder.write(Buffer.from(chunk as Uint8Array));
    return (stream.write as (c: string, ...r: unknown[]) => boolean)(displayText(text), ...rest);
  };
  return new Proxy(stream, {
    get(target, prop) {
      if (prop === 'write') return write;
      if (prop === RAW) return target;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

/**
 * The stream under a displayStream, for the program's own controls (the progress line's `\r` and erase-line); the
 * stream itself when it is not one. Never for text that holds anything remote.
 */
export function rawStream<S extends NodeJS.WritableStream>(stream: S): S {
  return ((stream as unknown as Record<symbol, S | undefined>)[RAW] ?? stream) as S;
}

/** Until `out` drains, or `signal` ends (a reader gone: EPIPE aborts it, main.ts watchOutput). */
function drained(out: NodeJS.WritableStream, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      out.removeListener('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    out.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
    if (signal.aborted) done();
  });
}

/**
 * Write the pieces to `out` in writes of about 1 MiB, waiting for a slow reader to drain them, and giving the event
 * loop a turn every ~20 ms of work so a Ctrl-C or SIGTERM lands (a million tensors or 100,000 series are seconds of
 * text): the signal ends the output with `cancelled`, saying `what` was cancelled.
 */
export async function writeInSteps(out: NodeJS.WritableStream, signal: AbortSignal, pieces: Iterable<string>, what: string): Promise<void> {
  let buf = '';
  let since = Date.now();
  const cancelled = (): RemoteRunsError => new RemoteRunsError('cancelled', `${what} was cancelled while it printed`);
  for (const p of pieces) {
    buf += p;
    if (buf.length >= 1 << 20) {
      // A reader slower than this (a pipe) holds us back rather than a queue of all the output in memory.
      if (!out.write(buf)) await drained(out, signal);
      buf = '';
      if (signal.aborted) throw cancelled();
    }
    if (Date.now() - since >= 20) {
      await new Promise((resolve) => setImmediate(resolve));
      since = Date.now();
      if (signal.aborted) throw cancelled();
    }
  }
  if (buf) out.write(buf);
}
