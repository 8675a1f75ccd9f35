/** SSH wire encodings (RFC 4251 §5) shared by the agent and the key conversions: uint32 and string. */

export function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** `string`: a uint32 length, then the bytes (text as UTF-8). */
export function sshString(data: Buffer | string): Buffer {
  const b = typeof data === 'string' ? Buffer.from(data) : data;
  return Buffer.concat([u32(b.length), b]);
}
