/**
 * The one error the pure checkpoint readers throw: a code the caller can act on and a message for the user.
 * Readers are total: any input gives a result or an InspectError, never another exception.
 */
export type InspectErrorCode =
  /** The bytes end before the structure does (a file cut short, or a read that did not cover it). */
  | 'truncated'
  /** A length field claims more than any real checkpoint holds (e.g. a safetensors header of 2^64-1 bytes). */
  | 'absurd-length'
  /** The bytes are not the format they were read as. */
  | 'bad-format'
  /** A pickle uses an opcode this reader does not implement (it never executes anything). */
  | 'unsupported'
  /** A bound on nesting, memo, stack or output size was reached. */
  | 'too-large'
  /** The header is not wholly inside the bytes read: read [needFrom, needTo) and try again. */
  | 'need-more';

export class InspectError extends Error {
  override readonly name = 'InspectError';
  constructor(
    readonly code: InspectErrorCode,
    message: string,
    /** For `need-more`: the byte range of the file still needed. */
    readonly need?: { from: number; to: number },
    /** For `need-more`: other ranges worth reading in the same command (what will be needed once `need` is read). */
    readonly more: { from: number; to: number }[] = [],
  ) {
    super(message);
  }
}

export function isInspectError(e: unknown): e is InspectError {
  return e instanceof InspectError;
}
