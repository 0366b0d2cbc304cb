/**
 * Passing caught-up subscriptions over committed events their types cannot match, in memory,
 * without a read or a delivery (skip-not-defer, protocol §12.3): what a send check would conclude.
 *
 * The work is kept off the append's path where it can be (docs/performance.md "Passing over
 * non-matching subscriptions"): which subscriptions may be passed over and which types each
 * names are worked out once per configuration of the stream's subscriptions (QuietIndex), not per
 * append, so an append whose types no subscription names is one map lookup per event, then one
 * cursor store per caught-up subscription (SubscriptionRuntime.advanceQuietly), no object copied,
 * and one row write per subscription every 1000 offsets (subscription-runtime.ts), all of a stream's together.
 */
import type { CommittedEvent, OutboundEntry } from '@rivulet/contract';
import type { SubscriptionRuntime } from '../subscription-runtime.js';

/** What passing over needs of a stream's subscriptions, derived from one `outbound` of its core state. */
export class QuietIndex {
  /** Keys of the subscriptions an event can be passed over for: a type filter, not processor-wake. */
  readonly keys: readonly string[];
  /** For each event type one of those subscriptions names: the keys that name it. */
  private readonly byType = new Map<string, string[]>();
  /** The types the copy subscriptions name, all of them when one has no type filter (copyMayMatch). */
  private readonly copyTypes: ReadonlySet<string> | 'all' | undefined;

  constructor(readonly outbound: { readonly byKey: Readonly<Record<string, OutboundEntry>> }) {
    const keys: string[] = [];
    let copyTypes: Set<string> | undefined;
    let allCopied = false;
    for (const [key, entry] of Object.entries(outbound.byKey)) {
      const types = entry.configuration.filter?.eventTypes;
      if (entry.configuration.receiver.action === 'copy-to-stream') {
        if (types === undefined) allCopied = true;
        else for (const type of types) (copyTypes ??= new Set()).add(type);
      }
      if (types === undefined || entry.configuration.receiver.action === 'processor-wake') continue;
      keys.push(key);
      for (const type of new Set(types)) {
        const named = this.byType.get(type);
        if (named) named.push(key);
        else this.byType.set(type, [key]);
      }
    }
    this.keys = keys;
    this.copyTypes = allCopied ? 'all' : copyTypes;
  }

  /**
   * Whether a copy subscription's type filter may match one of `fresh` (events not ephemeral; the
   * JSONata condition is left to the read): StreamSender.written starts such copies before the commit.
   */
  copyMayMatch(fresh: readonly { readonly event: CommittedEvent }[]): boolean {
    const types = this.copyTypes;
    if (types === undefined) return false;
    for (let i = 0; i < fresh.length; i++) {
      const event = fresh[i]!.event;
      if (event.ephemeral !== true && (types === 'all' || types.has(event.type))) return true;
    }
    return false;
  }

  /** The keys whose types match one of the events that are not ephemeral; undefined when none does. */
  matching(committed: readonly CommittedEvent[]): Set<string> | undefined {
    let matched: Set<string> | undefined;
    for (let i = 0; i < committed.length; i++) {
      const event = committed[i]!;
      if (event.ephemeral === true) continue;
      const named = this.byType.get(event.type);
      if (named === undefined) continue;
      matched ??= new Set();
      for (let k = 0; k < named.length; k++) matched.add(named[k]!);
    }
    return matched;
  }
}

/**
 * Moves the subscriptions of `index` that were caught up just before `committed` (cursor at the
 * offset before the first event; not halted, in flight, backing off or awaiting a watchdog) and
 * whose types match none of the events past them. Answers true when every runtime row was moved:
 * no subscription of the stream needs a check for these events.
 */
export function passOver(
  index: QuietIndex,
  rows: SubscriptionRuntime,
  inFlight: ReadonlyMap<string, unknown>,
  committed: readonly CommittedEvent[],
): boolean {
  const first = committed[0];
  const last = committed[committed.length - 1];
  if (!first || !last) return false;
  const before = first.offset - 1;
  const matched = index.matching(committed);
  const keys = index.keys;
  let passed = 0;
  let due = false;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (matched?.has(key)) continue;
    const row = rows.get(key);
    if (row === undefined || row.cursor !== before || row.halted || row.inflightDeadlineAt !== null || row.nextAttemptAt !== null || (inFlight.size > 0 && inFlight.has(key))) continue;
    if (rows.advanceQuietly(row, last.offset)) due = true;
    passed++;
  }
  // A row is due to be stored (advanceQuietly): every row moved in memory goes with it, in one transaction.
  if (due) rows.persistDirty();
  return passed === rows.size;
}
