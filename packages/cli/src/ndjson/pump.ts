/**
 * Drives lines from a LineQueue through a caller's mapping into a Batcher. Blank lines are
 * skipped (they still count for line numbers). What is queued is batched; when the input has
 * nothing more for now the batch goes at once, so a live `tail --json` piped in is appended as
 * it arrives rather than when a batch is full.
 */
import { BATCH_MAX_EVENTS, type Batcher, type Item } from './batches.js';
import type { Line, LineQueue } from './lines.js';

export async function pumpLines(
  queue: LineQueue,
  toItems: (line: Line) => readonly Item[],
  batcher: Batcher,
  onLines?: (count: number) => void,
  first: readonly Line[] = [],
): Promise<void> {
  let lines: readonly Line[] = first;
  for (;;) {
    if (lines.length === 0) lines = await queue.take(BATCH_MAX_EVENTS);
    if (lines.length === 0) break;
    for (const line of lines) {
      if (line.text.trim() === '') continue;
      let items: readonly Item[];
      try {
        items = toItems(line);
      } catch (error) {
        // The lines before a line that cannot be read are appended, as before a refused one.
        await batcher.flush();
        throw error;
      }
      for (const item of items) await batcher.add(item);
    }
    onLines?.(lines.length);
    lines = [];
    if (queue.available === 0) await batcher.flush();
  }
  await batcher.flush();
}
