/**
 * Reading the cross-stream listing (protocol §21) within a bound, and the header badge's wording.
 * Pure (no DOM), so Node tests cover both sides of the bound.
 */

/** At most `max` items of `items`; `more` when at least one more was there (the rest is not read). */
export async function readUpTo<T>(items: AsyncIterable<T>, max: number): Promise<{ rows: T[]; more: boolean }> {
  const rows: T[] = [];
  for await (const item of items) {
    if (rows.length === max) return { rows, more: true };
    rows.push(item);
  }
  return { rows, more: false };
}

/**
 * "3 halted", or null for no badge. The listing puts halted rows first, so a capped read can only
 * have missed halted ones when every row it read is halted: then "1000+ halted".
 */
export function haltedBadge(rows: readonly { status: string }[], more: boolean): string | null {
  const halted = rows.filter((r) => r.status === 'halted').length;
  if (halted === 0) return null;
  return `${halted}${more && halted === rows.length ? '+' : ''} halted`;
}
