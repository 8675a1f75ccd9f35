/** SHA-256 of a local file, streamed (Node's crypto: about 1 GiB/s here), cancellable. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { RemoteRunsError } from '../types';

export async function sha256File(file: string, signal?: AbortSignal): Promise<string> {
  const hash = createHash('sha256');
  const stream = createReadStream(file, { highWaterMark: 1 << 20 });
  try {
    for await (const chunk of stream) {
      if (signal?.aborted) throw new RemoteRunsError('cancelled', 'Verification cancelled');
      hash.update(chunk as Buffer);
    }
  } catch (e) {
    if (e instanceof RemoteRunsError) throw e;
    throw new RemoteRunsError('protocol', `Cannot read ${file} to verify it: ${(e as Error).message}`);
  } finally {
    stream.destroy();
  }
  return hash.digest('hex');
}
