/**
 * copy-to-stream, the sending half: hand the batch, stamped with the run, to the receiving stream
 * through the directory port. A paused or unavailable receiver is *unavailable* (backoff, never a
 * failing event, protocol §4.5, §12.4, §13.6); any other refusal is a failure of the batch.
 */
import { RivuletError } from '@rivulet/contract';
import type { CopyBatch, CopyBatchEvent } from '../../core/copy-builder.js';
import type { StreamDirectory } from '../../ports/directory.js';
import { errorText, type DeliveredEvent, type Receiver } from './receiver.js';

/** One event of a copy batch: the source coordinates and the shaped event (protocol §13.2). */
export function copyBatchEvent({ event, shaped, fieldsJson }: DeliveredEvent): CopyBatchEvent {
  const copy: CopyBatchEvent = { offset: event.offset, type: event.type, createdAt: event.createdAt, shaped };
  if (event.source) copy.source = event.source;
  // The stored text of what the copy stores, when no transform changed it: spliced, not serialised again.
  if (fieldsJson !== undefined) copy.fieldsJson = fieldsJson;
  return copy;
}

/**
 * A directory that can write copies into the source's own storage (`writeCopies`, the Node host)
 * makes the receiver durable with its source: a batch is answered once written, and the outcome
 * carries the promise of its durability (Receiver.durableWithSource).
 */
export function copyReceiver(directory: StreamDirectory): Receiver {
  const write = directory.writeCopies?.bind(directory);
  return {
    durableWithSource: write !== undefined,
    ignoresSignal: true,
    async deliver(ctx, events) {
      const receiver = ctx.entry.configuration.receiver;
      if (receiver.action !== 'copy-to-stream') throw new Error('copy receiver given another action');
      const batch: CopyBatch = {
        projectId: ctx.projectId,
        path: ctx.path,
        streamId: ctx.streamId,
        streamCreatedAt: ctx.streamCreatedAt,
        subscriptionKey: ctx.subscriptionKey,
        cursorChangedAtSourceOffset: ctx.cursorChangedAtSourceOffset,
        receivingStreamPath: receiver.receivingStreamPath,
        events: events.map(copyBatchEvent),
      };
      try {
        if (write !== undefined) {
          const receipt = await write(ctx.projectId, receiver.receivingStreamPath, batch);
          return { ok: true, dropped: receipt.dropped, durable: receipt.durable };
        }
        const receipt = await directory.receiveCopies(ctx.projectId, receiver.receivingStreamPath, batch);
        return { ok: true, dropped: receipt.dropped };
      } catch (error) {
        if (error instanceof RivuletError && (error.code === 'PRECONDITION_FAILED' || error.code === 'UNAVAILABLE')) {
          return { ok: false, kind: 'unavailable', error: `receiving stream ${receiver.receivingStreamPath}: ${error.message}` };
        }
        return { ok: false, kind: 'failing', error: `receiving stream ${receiver.receivingStreamPath}: ${errorText(error)}` };
      }
    },
  };
}
