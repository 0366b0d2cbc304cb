/**
 * The byte bound of a delivery batch (protocol §12.3: 1 MiB; engine/delivery/prepare.ts
 * MAX_BATCH_BYTES), and events sized against it, for the end-to-end tests of that bound
 * (subscriptions-copy.test.ts, rpc-itx-call.test.ts).
 *
 * A batch counts an event by the UTF-8 bytes of the JSON text the event is stored as
 * (engine/delivery/collect.ts). An event appended over HTTP is stored as `JSON.stringify` of the
 * committed event (core/decide-append.ts `buildEvent`), and `JSON.stringify` of that event as read
 * back writes the same text again (the same members in the same order, strings and numbers as they
 * were): `storedBytes` of an event read back is what the batch counts.
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { EventInput } from './http.js';

export const MAX_BATCH_BYTES = 1_048_576;

/** What a delivery batch counts an event by: the UTF-8 bytes of its stored JSON, written again from the event as read back. */
export const storedBytes = (event: CommittedEvent): number => Buffer.byteLength(JSON.stringify(event));

/**
 * Inputs of type `job` that, appended together to `path` with the first at `firstOffset`, are
 * stored as texts of exactly `lengths` UTF-8 bytes: a `pad` string in the payload makes up the
 * difference, of ASCII, or with `wide` of "é" (2 bytes, 1 UTF-16 code unit) and at most one "x", so
 * that such an event is almost twice as many bytes as characters. (createdAt is always 24
 * characters, `YYYY-MM-DDTHH:mm:ss.sssZ`; the offsets' digits are counted.) Each must stay within
 * the event limit (protocol §3.3: `--max-event-bytes`, 1 MiB of committed JSON) and all of them
 * within the body limit (8 MiB), or the append is PAYLOAD_TOO_LARGE.
 */
export function sizedJobs(path: string, firstOffset: number, lengths: readonly number[], wide = false): EventInput[] {
  return lengths.map((length, i) => {
    const bare = storedBytes({ path, offset: firstOffset + i, createdAt: new Date(0).toISOString(), type: 'job', payload: { pad: '' } });
    if (length < bare) throw new Error(`an event of ${path} at offset ${firstOffset + i} is at least ${bare} bytes as stored`);
    const missing = length - bare;
    const pad = wide ? 'é'.repeat(Math.floor(missing / 2)) + 'x'.repeat(missing % 2) : 'x'.repeat(missing);
    return { type: 'job', payload: { pad } };
  });
}
