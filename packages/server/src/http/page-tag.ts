/**
 * Validators of read pages (protocol §5.3). A page whose events can no longer change — it is full
 * (`limit` events: later appends land after its last one), or its `beforeOffset` lies at or below
 * the durable head — gets an entity tag; the page at the head, which may still grow, gets none.
 * Pages that include ephemeral events get none either: those are pruned (protocol §4.4).
 *
 * The tag is weak (`W/"…"`): the answer also carries `streamMaxOffset`, the head at the time of the
 * read, so two answers of one fixed page differ in that number while their events are the same.
 * It names the lifetime, so a destroyed and recreated stream never matches an old tag.
 */

export interface PageQuery {
  limit: number;
  beforeOffset?: number | undefined;
  includeEphemeral: boolean;
}

/** What a tag is made of: the lifetime, the head of the read, the count and first and last offsets (0 when empty). */
export interface PageSummary {
  streamId: string | null;
  streamMaxOffset: number;
  count: number;
  first: number;
  last: number;
}

/** The page's tag, or undefined while it may still change. */
export function pageTag(page: PageSummary, query: PageQuery): string | undefined {
  if (page.streamId === null || query.includeEphemeral) return undefined;
  const full = page.count === query.limit;
  const closed = query.beforeOffset !== undefined && query.beforeOffset - 1 <= page.streamMaxOffset;
  if (!full && !closed) return undefined;
  return `W/"${page.streamId}.${page.first}.${page.last}.${page.count}"`;
}

/** Whether `If-None-Match` names `tag` (weak comparison, RFC 9110 §13.1.2; `*` names any tag). */
export function noneMatch(header: string | null, tag: string): boolean {
  if (header === null) return false;
  const opaque = tag.startsWith('W/') ? tag.slice(2) : tag;
  for (const candidate of header.split(',')) {
    const trimmed = candidate.trim();
    if (trimmed === '*') return true;
    if ((trimmed.startsWith('W/') ? trimmed.slice(2) : trimmed) === opaque) return true;
  }
  return false;
}
