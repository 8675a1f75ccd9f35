/**
 * The product code bench/listing.ts times "as shipped": it bundles this file with esbuild as esbuild.mjs bundles the
 * extension (ssh2 without its native crypto binding) and loads the bundle, so the listing runs under node's own JIT,
 * without tsx's getter per imported binding and `__name` per function (~1.8x on the parse alone).
 */
export { ConnectionPool } from '../src/core/ssh/pool';
export { HostDirectory } from '../src/core/hosts';
export { RemoteRunsCore } from '../src/core/service';
