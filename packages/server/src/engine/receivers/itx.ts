/**
 * itx-call and processor-wake, the sending halves (protocol §18.4, §20.3): both reach a worker or
 * processor host registered in the source stream's project through the ITX port (ports/itx.ts),
 * which evaluates the stored expression from that project's root on every call and classifies
 * what fails (§18.5). The same receivers run on both hosts; only the port differs.
 *
 * itx-call hands the final method the batch of §18.4: the delivery's stamp, `streamMaxOffset` and
 * the events with the transform applied to `type`/`payload`/`metadata` (their coordinates stay the
 * source's). The resolved call is the acknowledgement.
 *
 * processor-wake's wake is the port's `wake`, which the processor driver
 * (engine/delivery/processor-driver.ts) calls with its wake request and judges the answer of.
 */
import { RivuletError, pickDeliveryStamp, type ItxBatch } from '@rivulet/contract';
import type { ItxPort } from '../../ports/itx.js';
import type { ProcessorWaker } from '../delivery/processor-port.js';
import type { DeliveredEvent, Receiver } from './receiver.js';

/** One event of an itx-call batch: the source coordinates with the shaped type, payload and metadata (protocol §18.4). */
export function itxEvent({ event, shaped }: DeliveredEvent): ItxBatch['events'][number] {
  const { type: _type, payload: _payload, metadata: _metadata, ...coordinates } = event;
  return { ...coordinates, ...shaped };
}

export function itxCallReceiver(itx: ItxPort): Receiver {
  return {
    async deliver(ctx, events) {
      const receiver = ctx.entry.configuration.receiver;
      if (receiver.action !== 'itx-call') throw new RivuletError('INTERNAL', 'itx receiver given another action');
      const batch: ItxBatch = {
        ...pickDeliveryStamp(ctx),
        streamMaxOffset: ctx.streamMaxOffset,
        events: events.map(itxEvent),
      };
      return itx.call(ctx.projectId, receiver.expression, batch);
    },
  };
}

export function processorWakeReceiver(itx: ItxPort): ProcessorWaker {
  return { wake: (projectId, expression, request) => itx.wake(projectId, expression, request) };
}
