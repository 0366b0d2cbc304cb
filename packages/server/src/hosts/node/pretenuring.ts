/**
 * V8's allocation-site pretenuring, turned off for the server's process on the V8 versions where
 * it makes a copy drain slower (docs/performance.md "Allocation-site pretenuring off on Node 24").
 *
 * V8 watches where objects are allocated; when most objects of one site survive a young
 * collection, it allocates that site's later objects in the old generation at once. A copy drain
 * keeps a few batches of copies alive at every young collection (read ahead, being written,
 * waiting for their sync), so its sites look long-lived; on V8 13 (Node 24) the old objects then
 * hold their young members alive until a full collection, and nearly all of a drain ends up
 * promoted: ~150 MB for 200,000 copies. With pretenuring off the drain promotes about a tenth of
 * that and costs less CPU per copy, and the appends are not slower. On V8 11 and 12 (Node 20, 22)
 * pretenuring helps both, so it is left on there.
 *
 * A pretenuring flag the operator gave on node's command line decides instead (node refuses it in
 * NODE_OPTIONS). Set once per process, when the host starts.
 */
import { setFlagsFromString } from 'node:v8';

/** The first V8 major version on which the host turns pretenuring off. */
export const PRETENURING_OFF_FROM_V8 = 13;

const PRETENURING_OFF_FLAG = '--no-allocation-site-pretenuring';

/**
 * Whether the host turns pretenuring off: on V8 `PRETENURING_OFF_FROM_V8` or later, unless a
 * pretenuring flag is among node's own arguments (`process.execArgv`).
 */
export function turnsPretenuringOff(v8Version: string, nodeArgs: readonly string[]): boolean {
  const major = Number.parseInt(v8Version, 10);
  if (!Number.isInteger(major) || major < PRETENURING_OFF_FROM_V8) return false;
  return !nodeArgs.some((arg) => /allocation[-_]site[-_]pretenuring/.test(arg));
}

let tuned = false;

/** Applies turnsPretenuringOff to this process, once. */
export function tunePretenuring(): void {
  if (tuned) return;
  tuned = true;
  if (turnsPretenuringOff(process.versions.v8, process.execArgv)) setFlagsFromString(PRETENURING_OFF_FLAG);
}
