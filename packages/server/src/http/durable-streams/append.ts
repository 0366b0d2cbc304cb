/**
 * `POST /v1/stream/{name}`: append, close, or both (docs/durable-streams.md "Append",
 * "Closure", "Producers"). Decided against the stream's folded state and committed as one
 * atomic Rivulet append: the messages, then the closure; the producer and `Stream-Seq` stamps
 * ride in the metadata of the last event.
 */
import type { EventInput } from '@rivulet/contract';
import type { HeaderReader } from '../request-headers.js';
import { emptyAnswer as empty, goneAnswer as gone, notFoundAnswer as notFound, refusal as refuse, type DsAnswer, type Fields } from './answer.js';
import { messagesOf } from './bodies.js';
import { CLOSED_TYPE, STAMP_KEY, stampJson, type ProducerStamp, type Stamp } from './messages.js';
import type { DsStreams } from './store.js';
import { configOf, headOf, judgeProducer, type DsState } from './state.js';
import { H, LOWER, formatOffset, isJsonType, mediaType, parseCount } from './wire.js';

export interface AppendRequest {
  projectId: string | null;
  path: string;
  headers: HeaderReader;
  /** The body's bytes: at once when the entrance holds them already (the connection front). */
  body: () => Promise<Uint8Array> | Uint8Array;
}

function producerOf(headers: HeaderReader): ProducerStamp | null | DsAnswer {
  const id = headers.get(LOWER.producerId);
  const epoch = headers.get(LOWER.producerEpoch);
  const seq = headers.get(LOWER.producerSeq);
  if (id === null && epoch === null && seq === null) return null;
  if (id === null || epoch === null || seq === null) {
    return refuse(400, 'Producer-Id, Producer-Epoch and Producer-Seq must be given together');
  }
  if (id === '') return refuse(400, 'Producer-Id must not be empty');
  const e = parseCount(epoch);
  if (e === null) return refuse(400, 'Producer-Epoch must be a non-negative integer');
  const s = parseCount(seq);
  if (s === null) return refuse(400, 'Producer-Seq must be a non-negative integer');
  return { id, epoch: e, seq: s };
}

const closedAnswer = (state: DsState): DsAnswer =>
  refuse(409, 'the stream is closed', { [H.closed]: 'true', [H.nextOffset]: formatOffset(headOf(state)) });

function sameProducer(a: ProducerStamp | null, b: ProducerStamp | null): boolean {
  return a !== null && b !== null && a.id === b.id && a.epoch === b.epoch && a.seq === b.seq;
}

export async function handleAppend(streams: DsStreams, request: AppendRequest): Promise<DsAnswer> {
  const { headers } = request;
  const producer = producerOf(headers);
  if (producer !== null && 'status' in producer) return producer;
  const close = headers.get(LOWER.closed) === 'true';
  const seq = headers.get(LOWER.seq);
  const contentType = headers.get('content-type');
  const read = request.body();
  const body = read instanceof Uint8Array ? read : await read;
  const closeOnly = close && body.length === 0;
  if (body.length === 0 && !close) return refuse(400, 'an append needs a body (or Stream-Closed: true to close)');
  if (!closeOnly && contentType === null) return refuse(400, 'an append needs a Content-Type');

  return streams.write(request.projectId, request.path, (state) => {
    if (state === null) return { answer: notFound() };
    if (state.softDeleted) return { answer: gone() };
    if (state.closed) {
      // The very request that closed the stream, sent again, is answered as it was.
      if (producer !== null && sameProducer(producer, state.closedBy)) {
        return { answer: empty(204, { [H.nextOffset]: formatOffset(headOf(state)), [H.closed]: 'true', ...echo(producer, producer.seq) }) };
      }
      if (closeOnly && producer === null) return { answer: empty(204, { [H.nextOffset]: formatOffset(headOf(state)), [H.closed]: 'true' }) };
      return { answer: closedAnswer(state) };
    }
    const config = configOf(state);
    // The same text is the same media type: the usual case is judged without parsing either.
    if (!closeOnly && contentType !== config.contentType && mediaType(contentType) !== mediaType(config.contentType)) {
      return { answer: refuse(409, `content type ${contentType} does not match the stream's ${config.contentType}`) };
    }
    const stamp: Stamp = {};
    if (producer !== null) {
      const verdict = judgeProducer(state.producers.get(producer.id), producer.epoch, producer.seq);
      switch (verdict.kind) {
        case 'duplicate':
          return { answer: empty(204, echo(producer, verdict.lastSeq)) };
        case 'stale-epoch':
          return { answer: refuse(403, 'stale producer epoch', { [H.producerEpoch]: String(verdict.currentEpoch) }) };
        case 'epoch-must-start-at-zero':
          return { answer: refuse(400, 'a new producer epoch must start at sequence 0') };
        case 'gap':
          return {
            answer: refuse(409, 'producer sequence gap', { [H.expectedSeq]: String(verdict.expected), [H.receivedSeq]: String(verdict.received) }),
          };
        case 'accept':
          stamp.producer = producer;
      }
    }
    if (seq !== null) {
      if (state.lastSeq !== null && seq <= state.lastSeq) return { answer: refuse(409, `Stream-Seq ${seq} is not after ${state.lastSeq}`) };
      stamp.seq = seq;
    }
    let inputs: EventInput[] = [];
    if (!closeOnly) {
      const messages = messagesOf(body, isJsonType(config.contentType), false);
      if (!messages.ok) return { answer: refuse(400, messages.message) };
      inputs = messages.inputs;
    }
    if (close) inputs.push({ type: CLOSED_TYPE, payload: {} });
    const last = inputs[inputs.length - 1]!;
    if (stamp.producer !== undefined || stamp.seq !== undefined) inputs[inputs.length - 1] = { ...last, metadata: { ...last.metadata, [STAMP_KEY]: stampJson(stamp) } };
    return {
      inputs,
      done: (after) => {
        const fields: Fields = { [H.nextOffset]: formatOffset(headOf(after)) };
        if (after.closed) fields[H.closed] = 'true';
        // A producer's append answers 200 with its stamp; a close alone answers 204 like any close.
        if (producer !== null) return empty(closeOnly ? 204 : 200, { ...fields, ...echo(producer, producer.seq) });
        return empty(204, fields);
      },
    };
  });
}

function echo(producer: ProducerStamp, seq: number): Fields {
  return { [H.producerEpoch]: String(producer.epoch), [H.producerSeq]: String(seq) };
}
