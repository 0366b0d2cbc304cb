/**
 * itx-call delivery (SEMANTICS §5.7, API.md §5): evaluate the subscription's expression from the
 * source project's root on every delivery and call its final method with the batch; the resolved
 * call is the acknowledgement. Outcomes (§5.4):
 * - the target cannot be reached (no worker of that name connected, its session broke, or the
 *   worker marks the error `unavailable: true`): unavailable — backoff, never a skip;
 * - the worker's error carries `retryable: false`: fatal — halt at once;
 * - any other error: failing.
 */
import { RivuletError, pickDeliveryStamp } from '@rivulet/contract';
import type { DeliveryOutcome, Receiver } from '../engine/receivers/receiver.js';
import { ItxStepError, callItx, messageOf } from './itx-call.js';
import type { ItxRoot } from './root.js';

/** Errors capnweb raises when the peer's session is gone (its own, unexported messages). */
const BROKEN_SESSION = /Peer closed WebSocket|WebSocket connection failed|RPC session was shut down|RPC session failed/i;

/** The outcome of a failed ITX call (also used by processor wakes and batches, rpc/processor-waker.ts). */
export function classify(error: unknown, broken: boolean): Extract<DeliveryOutcome, { ok: false }> {
  const cause = error instanceof ItxStepError ? error.cause : error;
  const props = (cause ?? {}) as { code?: unknown; unavailable?: unknown; retryable?: unknown };
  const message = messageOf(error);
  if (broken || props.unavailable === true || props.code === 'UNAVAILABLE' || BROKEN_SESSION.test(message)) {
    return { ok: false, kind: 'unavailable', error: message };
  }
  if (props.retryable === false) return { ok: false, kind: 'fatal', error: message };
  return { ok: false, kind: 'failing', error: message };
}

export function itxReceiver(rootFor: (projectId: string | null) => ItxRoot): Receiver {
  return {
    async deliver(ctx, events) {
      const receiver = ctx.entry.configuration.receiver;
      if (receiver.action !== 'itx-call') throw new RivuletError('INTERNAL', 'itx receiver given another action');
      const batch = {
        ...pickDeliveryStamp(ctx),
        streamMaxOffset: ctx.streamMaxOffset,
        // The transform shapes type/payload/metadata; coordinates stay the source's.
        events: events.map(({ event, shaped }) => {
          const { type: _type, payload: _payload, metadata: _metadata, ...coordinates } = event;
          return { ...coordinates, ...shaped };
        }),
      };
      let broken = false;
      try {
        await callItx(rootFor(ctx.projectId), receiver.expression, batch, (target) => {
          const watch = (target as { onRpcBroken?: (cb: () => void) => void }).onRpcBroken;
          if (typeof watch === 'function') watch.call(target, () => (broken = true));
        });
        return { ok: true };
      } catch (error) {
        return classify(error, broken);
      }
    },
  };
}
