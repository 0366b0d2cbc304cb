/**
 * Gives the memory of swept stream actors back (architecture.md, "Actors come and go; delivery
 * does not"). Once the registry's idle sweep drops actors, what they held is garbage, but V8
 * collects its old generation only when allocation makes it: a server that went quiet allocates
 * next to nothing, so the garbage of thousands of dropped actors stayed resident for minutes or
 * for good (docs/operations.md "Tuning knobs"). After a sweep that dropped many actors and
 * left fewer loaded than it dropped (the process is going quiet), this asks V8 for full
 * collections until one gives little back (releaseHeap); freed pages go back to the system. A busy
 * server, whose sweeps drop a small share of what it holds, is left to V8's own collector.
 *
 * The collection is V8's `gc` function, taken once with the `--expose-gc` flag set for the moment
 * of a `vm` context's creation and unset again, so no context of the program sees a global `gc`.
 */
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** A sweep must drop at least this many actors (a few MB of garbage) to ask for a collection. */
export const RELEASE_MIN_DROPPED = 1000;

let collector: (() => void) | undefined;
/** How many full collections the last releaseHeap made (its test reads it). */
export let lastReleaseRounds = 0;

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

/** Full collections at most per release. */
const MAX_ROUNDS = 6;
/** A collection that gives back less of the heap than this ends the release. */
const ROUND_GAIN_BYTES = 1024 * 1024;

/**
 * Full collections until one gives back less than ROUND_GAIN_BYTES of the heap. The live objects
 * left on a page keep the whole page, and each collection moves those of only some sparse pages
 * (V8 bounds the bytes it moves per collection), so after thousands of actors were dropped
 * between the objects that stay, a few rounds return what one does not.
 */
export function releaseHeap(collect: () => void = fullCollection, heapSize: () => number = () => getHeapStatistics().total_heap_size): void {
  let before = heapSize();
  for (let round = 1; round <= MAX_ROUNDS; round++) {
    collect();
    lastReleaseRounds = round;
    const after = heapSize();
    if (before - after < ROUND_GAIN_BYTES) return;
    before = after;
  }
}

/** The registry's `afterSweep` of the Node host: collections after a sweep that freed most of the actors. */
export function releaseAfterSweep(collect: () => void = releaseHeap, minDropped = RELEASE_MIN_DROPPED): (dropped: number, loaded: number) => void {
  return (dropped, loaded) => {
    if (dropped >= minDropped && dropped > loaded) collect();
  };
}
