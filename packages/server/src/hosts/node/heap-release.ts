/**
 * Gives the memory of swept stream actors back (architecture.md, "Actors come and go; delivery
 * does not"). Once the registry's idle sweep drops actors, what they held is garbage, but V8
 * collects its old generation only when allocation makes it: a server that went quiet allocates
 * next to nothing, so the garbage of thousands of dropped actors stayed resident for minutes or
 * for good (bench/README.md, bench/peers idle group). After a sweep that dropped many actors and
 * left fewer loaded than it dropped (the process is going quiet), this asks V8 for one full
 * collection, which also returns the freed pages. A busy server, whose sweeps drop a small share
 * of what it holds, is left to V8's own collector.
 *
 * The collection is V8's `gc` function, taken once with the `--expose-gc` flag set for the moment
 * of a `vm` context's creation and unset again, so no context of the program sees a global `gc`.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A sweep must drop at least this many actors (a few MB of garbage) to ask for a collection. */
export const RELEASE_MIN_DROPPED = 1000;

let collector: (() => void) | undefined;

/** V8's full collection (synchronous: a pause of about 10 ms per 50 MB of live heap). */
export function fullCollection(): void {
  if (!collector) {
    setFlagsFromString('--expose-gc');
    try {
      collector = runInNewContext('gc') as () => void;
    } finally {
      setFlagsFromString('--no-expose-gc');
    }
  }
  collector();
}

/** The registry's `afterSweep` of the Node host: one collection after a sweep that freed most of the actors. */
export function releaseAfterSweep(collect: () => void = fullCollection, minDropped = RELEASE_MIN_DROPPED): (dropped: number, loaded: number) => void {
  return (dropped, loaded) => {
    if (dropped >= minDropped && dropped > loaded) collect();
  };
}
