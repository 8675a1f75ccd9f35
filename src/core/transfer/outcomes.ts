/**
 * What a download did to each file of its plan, held by plan index: one byte per file and, for a file proven by
 * SHA-256, its 32 bytes. The `FileOutcome`s callers read are views made when asked, each deriving its name and local
 * path from the plan's file. A pull of 100,000 files held an object, a local path and a hex digest per file
 * (~250 bytes, 25 MB) from the first file placed to the end; here it is 33 bytes per file and 4 MB of views at the
 * end (bench/manyFiles.ts). Outcomes out of the ordinary (a symlink, a replaced file, resumed or refetched bytes, a
 * check other than the download's own) keep their object: they are few.
 */
import type { FileOutcome, PlanFile, VerifyMode } from './types';

const KINDS: readonly FileOutcome['outcome'][] = ['downloaded', 'resumed', 'already-complete', 'identical', 'declined'];
/** The kind byte: 0 for a file without an outcome yet, else 1 + its index in KINDS, plus this bit with a digest. */
const HAS_DIGEST = 0x80;
const HEX = /^[0-9a-f]{64}$/;

export class FileOutcomes {
  private readonly kinds: Uint8Array;
  private readonly digests: Buffer;
  private readonly unusual = new Map<number, FileOutcome>();

  constructor(
    private readonly files: readonly PlanFile[],
    /** The download's check: a plain outcome was checked this way. */
    private readonly verify: VerifyMode,
  ) {
    this.kinds = new Uint8Array(files.length);
    this.digests = Buffer.alloc(32 * files.length);
  }

  /** Whether file `i` has an outcome. */
  has(i: number): boolean {
    return this.kinds[i] !== 0 || this.unusual.has(i);
  }

  /** Record what happened to file `i` (its `relative` and `localPath` must be the plan file's own). */
  set(i: number, o: FileOutcome): void {
    const plain =
      o.symlink === undefined && !o.replaced && o.resumedBytes === 0 && o.refetchedBytes === 0 && !o.hashMismatches && o.verified === this.verify && (o.sha256 === undefined || HEX.test(o.sha256));
    if (!plain) {
      this.kinds[i] = 0;
      this.unusual.set(i, o);
      return;
    }
    this.unusual.delete(i);
    this.kinds[i] = (KINDS.indexOf(o.outcome) + 1) | (o.sha256 !== undefined ? HAS_DIGEST : 0);
    if (o.sha256 !== undefined) this.digests.write(o.sha256, 32 * i, 32, 'hex');
  }

  /** File `i` was downloaded whole by this download (checked as the download checks; `sha256` when hashed). */
  placed(i: number, sha256?: string): void {
    this.unusual.delete(i);
    this.kinds[i] = (KINDS.indexOf('downloaded') + 1) | (sha256 !== undefined ? HAS_DIGEST : 0);
    if (sha256 !== undefined) this.digests.write(sha256, 32 * i, 32, 'hex');
  }

  /** The outcomes in plan order (files without one left out). */
  list(): FileOutcome[] {
    const out: FileOutcome[] = [];
    for (let i = 0; i < this.files.length; i++) {
      const u = this.unusual.get(i);
      if (u) out.push(u);
      else if (this.kinds[i] !== 0) out.push(new OutcomeView(this, i));
    }
    return out;
  }

  /** (For OutcomeView.) */
  file(i: number): PlanFile {
    return this.files[i];
  }

  /** (For OutcomeView.) */
  kind(i: number): FileOutcome['outcome'] {
    return KINDS[(this.kinds[i] & ~HAS_DIGEST) - 1];
  }

  /** (For OutcomeView.) */
  digest(i: number): string | undefined {
    return this.kinds[i] & HAS_DIGEST ? this.digests.toString('hex', 32 * i, 32 * i + 32) : undefined;
  }

  /** (For OutcomeView.) */
  checkedBy(): VerifyMode {
    return this.verify;
  }
}

/** A plain outcome, read from its FileOutcomes when asked. Spread it with `toJSON()`: its fields are getters. */
class OutcomeView implements FileOutcome {
  constructor(
    private readonly all: FileOutcomes,
    private readonly i: number,
  ) {}

  get relative(): string {
    return this.all.file(this.i).relative;
  }

  get localPath(): string {
    return this.all.file(this.i).localPath;
  }

  get outcome(): FileOutcome['outcome'] {
    return this.all.kind(this.i);
  }

  get verified(): VerifyMode | undefined {
    return this.outcome === 'declined' ? undefined : this.all.checkedBy();
  }

  get sha256(): string | undefined {
    return this.all.digest(this.i);
  }

  get resumedBytes(): number {
    return 0;
  }

  get refetchedBytes(): number {
    return 0;
  }

  toJSON(): FileOutcome {
    const { relative, localPath, outcome, verified, sha256 } = this;
    return { relative, localPath, outcome, ...(verified ? { verified } : {}), ...(sha256 ? { sha256 } : {}), resumedBytes: 0, refetchedBytes: 0 };
  }
}
