/**
 * Delivery stamps (protocol §13.1).
 * A stamp names one source lifetime (streamCreatedAt, then streamId as a tie-break, §2.2) and one
 * config generation of it (cursorChangedAtSourceOffset). Stamps are totally ordered.
 */

export interface Stamp {
  streamId: string;
  streamCreatedAt: string;
  cursorChangedAtSourceOffset: number;
}

/** Negative when a is older than b, zero when equal, positive when newer. */
export function compareStamps(a: Stamp, b: Stamp): number {
  if (a.streamCreatedAt !== b.streamCreatedAt) return a.streamCreatedAt < b.streamCreatedAt ? -1 : 1;
  if (a.streamId !== b.streamId) return a.streamId < b.streamId ? -1 : 1;
  return a.cursorChangedAtSourceOffset - b.cursorChangedAtSourceOffset;
}

export function sameLifetime(a: Stamp, b: Stamp): boolean {
  return a.streamId === b.streamId && a.streamCreatedAt === b.streamCreatedAt;
}
