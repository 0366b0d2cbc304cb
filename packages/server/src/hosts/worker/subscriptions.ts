/**
 * The subscription listing of the Worker host (protocol §21): the project's index object holds
 * each subscription's source path, key and halt in the listing's order; a page reads positions
 * from it and asks each listed source's object for its entries (their progress and status live
 * there), keeping those of a wanted status. Limits (docs/cloudflare.md §4.5a): a page costs one call per
 * listed source; the index learns of a change after the commit that made it, so a just-changed
 * subscription may sit in the other group for a moment; a round that finds fewer wanted rows than
 * asked ends the page early with `next` when the index holds more (the page may then be short).
 */
import { SUBSCRIPTION_STATUSES, type SubscriptionListEntry, type SubscriptionListResponse } from '@rivulet/contract';
import type { SubscriptionListOptions } from '../../engine/service.js';
import { decodeListCursor, encodeListCursor, haltedFilter } from '../../engine/subscription-listing.js';
import type { ListPosition } from '../../engine/subscription-index.js';
import type { SubscribedCandidate, SubscribedQuery } from './api.js';

export interface ListingPorts {
  subscribed(query: SubscribedQuery): Promise<SubscribedCandidate[]>;
  entries(path: string): Promise<SubscriptionListEntry[]>;
}

/** Index positions read per round at most, and per page at most. */
const CHUNK = 200;
const POSITIONS = 1000;

export async function listProjectSubscriptions(ports: ListingPorts, options: SubscriptionListOptions): Promise<SubscriptionListResponse> {
  const statuses = options.statuses && options.statuses.length > 0 ? options.statuses : SUBSCRIPTION_STATUSES;
  const halted = haltedFilter(statuses);
  let after: ListPosition | undefined = options.after === undefined ? undefined : decodeListCursor(options.after);
  const out: SubscriptionListEntry[] = [];
  let last: ListPosition | undefined;
  const chunk = Math.min(Math.max(options.limit + 1, 16), CHUNK);
  for (let read = 0; read < POSITIONS; ) {
    const want = Math.min(chunk, POSITIONS - read);
    const candidates = await ports.subscribed({ prefix: options.prefix, after, halted, limit: want });
    read += candidates.length;
    const paths = [...new Set(candidates.map((c) => c.path))];
    const found = await Promise.all(paths.map((p) => ports.entries(p)));
    const byPath = new Map(paths.map((p, i) => [p, new Map(found[i]!.map((e) => [e.subscriptionKey, e]))]));
    for (const c of candidates) {
      after = c;
      const entry = byPath.get(c.path)?.get(c.key);
      if (!entry || !statuses.includes(entry.status)) continue;
      if (out.length === options.limit) return { subscriptions: out, next: encodeListCursor(last!) };
      out.push(entry);
      last = c;
    }
    if (candidates.length < want) return { subscriptions: out };
  }
  // The index holds more: the page ends here, the next one goes on from the last position read.
  return { subscriptions: out, next: encodeListCursor(after!) };
}
