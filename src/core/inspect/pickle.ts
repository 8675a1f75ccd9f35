/**
 * A pickle reader that never executes anything. It runs the pickle machine's stack and memo over the opcodes of
 * protocols 0–5 (torch.save writes protocol 2; torch.distributed.checkpoint's .metadata is pickle.dump's default, 4
 * or 5) and rebuilds the structure as plain values: a global is only its name (`{t:'global', module, name}`), a call
 * (REDUCE, NEWOBJ, OBJ, INST) is the callable's value and its arguments, BUILD's state is kept beside it, and a
 * persistent id is its id. What the names mean is decided elsewhere (torchPickle.ts), by name, never by calling.
 *
 * Opcode semantics follow CPython's Lib/pickletools.py (the opcode table) and Lib/pickle.py (_Unpickler).
 * Bounds: everything it builds is O(input) (each opcode makes at most one node); long integers wider than 64 bytes
 * are kept as their width; the structure's depth and expanded size are bounded by whoever walks it (walk.ts).
 */
import { InspectError } from './errors';

export type PickleValue =
  | { t: 'none' }
  | { t: 'bool'; v: boolean }
  | { t: 'int'; v: number | bigint }
  /** An integer wider than this reader keeps (LONG1/LONG4 over 64 bytes): only its width in bytes. */
  | { t: 'bigint'; bytes: number }
  | { t: 'float'; v: number }
  | { t: 'str'; v: string }
  /** Bytes are not kept: only their length (a checkpoint's pickle may carry big blobs). */
  | { t: 'bytes'; length: number }
  | { t: 'list'; items: PickleValue[] }
  | { t: 'tuple'; items: PickleValue[] }
  | { t: 'set'; items: PickleValue[]; frozen: boolean }
  | { t: 'dict'; entries: [PickleValue, PickleValue][] }
  | { t: 'global'; module: string; name: string }
  /** A call the pickle asks for (never made): fn(args), plus what SETITEM/APPEND/BUILD added to its result. */
  | { t: 'call'; fn: PickleValue; args: PickleValue; kwargs?: PickleValue; state?: PickleValue; items?: PickleValue[]; entries?: [PickleValue, PickleValue][] }
  | { t: 'persid'; id: PickleValue }
  | { t: 'ext'; code: number }
  | { t: 'buffer' };

type Slot = PickleValue | typeof MARK;
const MARK = Symbol('mark');

/** Widest integer kept as a value; wider ones keep only their width. */
const MAX_LONG_BYTES = 64;
/** A memo index beyond this is refused (pickle.py's memo is a dict, but real pickles number densely from 0). */
const MAX_MEMO = 1 << 24;

/**
 * Read one pickle from `buf` starting at `offset`. Returns the value STOP leaves and the offset after STOP.
 * Throws InspectError: `truncated` (the bytes end first), `bad-format` (a stack or memo misuse, an unknown opcode
 * byte), `unsupported` (an opcode this reader does not implement).
 */
export function readPickle(buf: Uint8Array, offset = 0): { value: PickleValue; end: number } {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const stack: Slot[] = [];
  const memo = new Map<number, PickleValue>();
  const marks: number[] = [];
  let p = offset;
  const need = (n: number): void => {
    if (n < 0 || p + n > buf.length) throw new InspectError('truncated', `pickle cut short at byte ${p} (an opcode needs ${n} more bytes)`);
  };
  const u8 = (): number => {
    need(1);
    return buf[p++];
  };
  const u16 = (): number => {
    need(2);
    const v = view.getUint16(p, true);
    p += 2;
    return v;
  };
  const u32 = (): number => {
    need(4);
    const v = view.getUint32(p, true);
    p += 4;
    return v;
  };
  const u64 = (): number => {
    need(8);
    const v = view.getBigUint64(p, true);
    p += 8;
    if (v > BigInt(buf.length)) throw new InspectError('truncated', `pickle cut short: a length of ${v} bytes at byte ${p - 8} is past its end`);
    return Number(v);
  };
  const bytes = (n: number): Uint8Array => {
    need(n);
    const b = buf.subarray(p, p + n);
    p += n;
    return b;
  };
  const line = (): string => {
    const nl = buf.indexOf(0x0a, p);
    if (nl < 0) throw new InspectError('truncated', `pickle cut short: a text argument at byte ${p} has no end of line`);
    const s = latin1(buf.subarray(p, nl));
    p = nl + 1;
    return s;
  };
  const bad = (why: string): InspectError => new InspectError('bad-format', `not a valid pickle at byte ${p}: ${why}`);
  const pop = (): PickleValue => {
    const v = stack.pop();
    if (v === undefined) throw bad('the stack is empty');
    if (v === MARK) throw bad('a mark where a value was expected');
    return v;
  };
  const top = (): PickleValue => {
    const v = stack[stack.length - 1];
    if (v === undefined || v === MARK) throw bad('no value on the stack');
    return v;
  };
  const popMark = (): PickleValue[] => {
    const m = marks.pop();
    if (m === undefined) throw bad('no mark on the stack');
    const items = stack.splice(m + 1);
    stack.pop(); // the mark itself
    for (const it of items) if (it === MARK) throw bad('an unmatched mark');
    return items as PickleValue[];
  };
  const push = (v: PickleValue): void => {
    stack.push(v);
  };
  const put = (i: number): void => {
    if (i > MAX_MEMO) throw new InspectError('too-large', `pickle memo index ${i} is beyond ${MAX_MEMO}`);
    memo.set(i, top());
  };
  const get = (i: number): void => {
    const v = memo.get(i);
    if (v === undefined) throw bad(`memo ${i} was never stored`);
    push(v);
  };
  const setItems = (target: PickleValue, kv: PickleValue[]): void => {
    if (kv.length % 2) throw bad('SETITEMS with an odd number of values');
    const pairs: [PickleValue, PickleValue][] = [];
    for (let i = 0; i < kv.length; i += 2) pairs.push([kv[i], kv[i + 1]]);
    if (target.t === 'dict') pushAll(target.entries, pairs);
    else if (target.t === 'call') pushAll((target.entries ??= []), pairs);
    else throw bad(`SETITEM on a ${target.t}`);
  };
  const appendItems = (target: PickleValue, items: PickleValue[]): void => {
    if (target.t === 'list') pushAll(target.items, items);
    else if (target.t === 'call') pushAll((target.items ??= []), items);
    else if (target.t === 'set' && !target.frozen) pushAll(target.items, items);
    else throw bad(`APPEND on a ${target.t}`);
  };
  const global = (module: string, name: string): PickleValue => ({ t: 'global', module, name });

  for (;;) {
    const at = p;
    const op = u8();
    switch (op) {
      case 0x80: // PROTO
        u8();
        break;
      case 0x95: // FRAME: a hint for buffering only
        need(8);
        p += 8;
        break;
      case 0x2e: // STOP
        if (stack.length !== 1 || marks.length) throw bad(`STOP with ${stack.length} values on the stack`);
        return { value: pop(), end: p };
      case 0x28: // MARK
        marks.push(stack.length);
        stack.push(MARK);
        break;
      case 0x30: // POP
        if (stack[stack.length - 1] === MARK) {
          stack.pop();
          marks.pop();
        } else pop();
        break;
      case 0x31: // POP_MARK
        popMark();
        break;
      case 0x32: // DUP
        push(top());
        break;
      case 0x4e: // NONE
        push({ t: 'none' });
        break;
      case 0x88: // NEWTRUE
        push({ t: 'bool', v: true });
        break;
      case 0x89: // NEWFALSE
        push({ t: 'bool', v: false });
        break;
      case 0x4b: // BININT1
        push({ t: 'int', v: u8() });
        break;
      case 0x4d: // BININT2
        push({ t: 'int', v: u16() });
        break;
      case 0x4a: // BININT
        need(4);
        push({ t: 'int', v: view.getInt32(p, true) });
        p += 4;
        break;
      case 0x8a: // LONG1
        push(long(bytes(u8())));
        break;
      case 0x8b: {
        // LONG4
        need(4);
        const n = view.getInt32(p, true);
        p += 4;
        if (n < 0) throw bad('LONG4 with a negative length');
        push(long(bytes(n)));
        break;
      }
      case 0x49: {
        // INT (text); I00/I01 are protocol 0's False/True
        const s = line();
        if (s === '00' || s === '01') push({ t: 'bool', v: s === '01' });
        else push(intText(s, bad));
        break;
      }
      case 0x4c: // LONG (text, trailing L)
        push(intText(line().replace(/L$/, ''), bad));
        break;
      case 0x46: {
        // FLOAT (text)
        const v = Number(line());
        push({ t: 'float', v });
        break;
      }
      case 0x47: // BINFLOAT (big-endian)
        need(8);
        push({ t: 'float', v: view.getFloat64(p, false) });
        p += 8;
        break;
      case 0x58: // BINUNICODE
        push({ t: 'str', v: utf8(bytes(u32())) });
        break;
      case 0x8c: // SHORT_BINUNICODE
        push({ t: 'str', v: utf8(bytes(u8())) });
        break;
      case 0x8d: // BINUNICODE8
        push({ t: 'str', v: utf8(bytes(u64())) });
        break;
      case 0x56: // UNICODE (raw-unicode-escape text)
        push({ t: 'str', v: line().replace(/\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g, (_, a: string | undefined, b: string | undefined) => safeCodePoint(parseInt(a ?? b ?? '0', 16))) });
        break;
      case 0x53: // STRING (quoted text): Python 2 str, read as text
        push({ t: 'str', v: line().replace(/^(['"])(.*)\1$/s, '$2') });
        break;
      case 0x54: {
        // BINSTRING
        need(4);
        const n = view.getInt32(p, true);
        p += 4;
        if (n < 0) throw bad('BINSTRING with a negative length');
        push({ t: 'str', v: latin1(bytes(n)) });
        break;
      }
      case 0x55: // SHORT_BINSTRING
        push({ t: 'str', v: latin1(bytes(u8())) });
        break;
      case 0x42: // BINBYTES
        push({ t: 'bytes', length: bytes(u32()).length });
        break;
      case 0x43: // SHORT_BINBYTES
        push({ t: 'bytes', length: bytes(u8()).length });
        break;
      case 0x8e: // BINBYTES8
        push({ t: 'bytes', length: bytes(u64()).length });
        break;
      case 0x96: // BYTEARRAY8
        push({ t: 'bytes', length: bytes(u64()).length });
        break;
      case 0x97: // NEXT_BUFFER (out-of-band: not in the file)
        push({ t: 'buffer' });
        break;
      case 0x98: // READONLY_BUFFER
        top();
        break;
      case 0x29: // EMPTY_TUPLE
        push({ t: 'tuple', items: [] });
        break;
      case 0x85: // TUPLE1
        push({ t: 'tuple', items: [pop()] });
        break;
      case 0x86: {
        // TUPLE2
        const b = pop();
        push({ t: 'tuple', items: [pop(), b] });
        break;
      }
      case 0x87: {
        // TUPLE3
        const c = pop();
        const b = pop();
        push({ t: 'tuple', items: [pop(), b, c] });
        break;
      }
      case 0x74: // TUPLE
        push({ t: 'tuple', items: popMark() });
        break;
      case 0x5d: // EMPTY_LIST
        push({ t: 'list', items: [] });
        break;
      case 0x6c: // LIST
        push({ t: 'list', items: popMark() });
        break;
      case 0x7d: // EMPTY_DICT
        push({ t: 'dict', entries: [] });
        break;
      case 0x64: {
        // DICT
        const d: PickleValue = { t: 'dict', entries: [] };
        setItems(d, popMark());
        push(d);
        break;
      }
      case 0x8f: // EMPTY_SET
        push({ t: 'set', items: [], frozen: false });
        break;
      case 0x91: // FROZENSET
        push({ t: 'set', items: popMark(), frozen: true });
        break;
      case 0x90: {
        // ADDITEMS
        const items = popMark();
        appendItems(top(), items);
        break;
      }
      case 0x61: {
        // APPEND
        const v = pop();
        appendItems(top(), [v]);
        break;
      }
      case 0x65: {
        // APPENDS
        const items = popMark();
        appendItems(top(), items);
        break;
      }
      case 0x73: {
        // SETITEM
        const v = pop();
        const k = pop();
        setItems(top(), [k, v]);
        break;
      }
      case 0x75: {
        // SETITEMS
        const kv = popMark();
        setItems(top(), kv);
        break;
      }
      case 0x63: {
        // GLOBAL "module\nname\n"
        const module = line();
        push(global(module, line()));
        break;
      }
      case 0x93: {
        // STACK_GLOBAL
        const name = pop();
        const module = pop();
        if (module.t !== 'str' || name.t !== 'str') throw bad('STACK_GLOBAL without two strings');
        push(global(module.v, name.v));
        break;
      }
      case 0x52: {
        // REDUCE
        const args = pop();
        const fn = pop();
        push({ t: 'call', fn, args });
        break;
      }
      case 0x81: {
        // NEWOBJ: cls.__new__(cls, *args)
        const args = pop();
        const cls = pop();
        push({ t: 'call', fn: cls, args });
        break;
      }
      case 0x92: {
        // NEWOBJ_EX
        const kwargs = pop();
        const args = pop();
        const cls = pop();
        push({ t: 'call', fn: cls, args, kwargs });
        break;
      }
      case 0x6f: {
        // OBJ: MARK cls args… OBJ
        const items = popMark();
        if (items.length === 0) throw bad('OBJ without a class');
        push({ t: 'call', fn: items[0], args: { t: 'tuple', items: items.slice(1) } });
        break;
      }
      case 0x69: {
        // INST "module\nname\n": MARK args… INST
        const module = line();
        const name = line();
        push({ t: 'call', fn: global(module, name), args: { t: 'tuple', items: popMark() } });
        break;
      }
      case 0x62: {
        // BUILD
        const state = pop();
        const obj = top();
        if (obj.t !== 'call') throw bad(`BUILD on a ${obj.t}`);
        obj.state = state;
        break;
      }
      case 0x50: // PERSID (text)
        push({ t: 'persid', id: { t: 'str', v: line() } });
        break;
      case 0x51: // BINPERSID
        push({ t: 'persid', id: pop() });
        break;
      case 0x82: // EXT1
        push({ t: 'ext', code: u8() });
        break;
      case 0x83: // EXT2
        push({ t: 'ext', code: u16() });
        break;
      case 0x84: // EXT4
        push({ t: 'ext', code: u32() });
        break;
      case 0x70: // PUT (text)
        put(memoIndex(line(), bad));
        break;
      case 0x71: // BINPUT
        put(u8());
        break;
      case 0x72: // LONG_BINPUT
        put(u32());
        break;
      case 0x94: // MEMOIZE
        put(memo.size);
        break;
      case 0x67: // GET (text)
        get(memoIndex(line(), bad));
        break;
      case 0x68: // BINGET
        get(u8());
        break;
      case 0x6a: // LONG_BINGET
        get(u32());
        break;
      default:
        throw new InspectError('bad-format', `not a pickle this reader knows: opcode 0x${op.toString(16).padStart(2, '0')} at byte ${at}`);
    }
  }
}

/** push without spreading (a spread of 100k values overflows the call stack). */
function pushAll<T>(to: T[], from: readonly T[]): void {
  for (let i = 0; i < from.length; i++) to.push(from[i]);
}

function long(b: Uint8Array): PickleValue {
  if (b.length === 0) return { t: 'int', v: 0 };
  if (b.length > MAX_LONG_BYTES) return { t: 'bigint', bytes: b.length };
  let v = 0n;
  for (let i = b.length - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[i]);
  if (b[b.length - 1] & 0x80) v -= 1n << BigInt(8 * b.length);
  return { t: 'int', v: v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v };
}

function intText(s: string, bad: (why: string) => InspectError): PickleValue {
  if (!/^[+-]?\d{1,150}$/.test(s.trim())) throw bad(`not an integer: ${JSON.stringify(s.slice(0, 40))}`);
  const v = BigInt(s.trim());
  return { t: 'int', v: v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v };
}

function memoIndex(s: string, bad: (why: string) => InspectError): number {
  if (!/^\d{1,9}$/.test(s)) throw bad(`not a memo index: ${JSON.stringify(s.slice(0, 40))}`);
  return Number(s);
}

function safeCodePoint(n: number): string {
  return n <= 0x10ffff ? String.fromCodePoint(n) : '\ufffd';
}

const decoder = new TextDecoder('utf-8', { fatal: false });
function utf8(b: Uint8Array): string {
  return decoder.decode(b);
}
function latin1(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('latin1');
}
