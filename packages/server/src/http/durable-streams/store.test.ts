/**
 * The write path of store.ts (docs/durable-streams.md "State"): a write decides against the
 * folded state, commits with the offset assertion, and when the log moved on in between decides
 * again against the new state — over a scripted stream service.
 */
import { describe, expect, it } from 'vitest';
import { RivuletError, type CommittedEvent, type EventInput } from '@rivulet/contract';
import type { ReadOptions, StreamService } from '../../engine/service.js';
import type { ReadRawResult } from '../../engine/actor.js';
import { DsStreams } from './store.js';
import { CLOSED_TYPE, CONFIGURED_TYPE, MESSAGE_TYPE } from './messages.js';

/** A one-stream log; `intrude` appends as another writer would, between a fold and a commit. */
function scriptedLog() {
  const events: CommittedEvent[] = [];
  const push = (input: EventInput) => {
    const event = { ...input, path: '/s', offset: events.length + 1, createdAt: '2026-12-01T00:00:00.000Z' } as CommittedEvent;
    events.push(event);
    return event;
  };
  push({ type: 'events.iterate.com/stream/created', payload: {} });
  push({ type: CONFIGURED_TYPE, payload: { contentType: 'text/plain' } });
  const asserted: number[] = [];
  let intrusions = 0;
  const service = {
    async read(_p: string | null, _path: string, options: ReadOptions): Promise<ReadRawResult> {
      const page = events.filter((e) => e.offset > options.afterOffset).slice(0, options.limit);
      return { streamId: 'lifetime', streamMaxOffset: events.length, events: page.map((e) => ({ offset: e.offset, json: JSON.stringify(e) })) };
    },
    async append(_p: string | null, _path: string, inputs: readonly EventInput[]): Promise<CommittedEvent[]> {
      asserted.push(inputs[0]!.offset ?? -1);
      if (intrusions > 0) {
        intrusions--;
        push({ type: 'shop.example/other', payload: {} });
      }
      if (inputs[0]!.offset !== events.length + 1) throw new RivuletError('CONFLICT', 'offset assertion failed');
      return inputs.map(({ offset: _offset, ...input }) => push(input));
    },
    async destroy() {
      return true;
    },
  } as unknown as StreamService;
  return { service, events, asserted, intrude: (times: number) => (intrusions = times) };
}

/**
 * `service` with the answer of its first append held until `release()` (the append itself is
 * made): the writes made meanwhile queue behind that one (a write with nothing queued before it
 * starts at once and commits alone).
 */
function firstAppendHeld(service: StreamService) {
  let calls = 0;
  let release: () => void = () => undefined;
  const held = {
    ...service,
    append: async (p: string | null, path: string, inputs: readonly EventInput[]) => {
      const committed = service.append(p, path, inputs);
      if (calls++ === 0) await new Promise<void>((resolve) => (release = resolve));
      return committed;
    },
  } as unknown as StreamService;
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((resolve) => setImmediate(resolve));
  };
  return { service: held, started: () => until(() => calls > 0), release: () => release() };
}

describe('DsStreams.write', () => {
  it('asserts the next offset and folds what it committed', async () => {
    const log = scriptedLog();
    const streams = new DsStreams(log.service, () => 0, true);
    const head = await streams.write(null, '/s', () => ({
      inputs: [{ type: MESSAGE_TYPE, payload: { text: 'a' } }],
      done: (after) => after.head,
    }));
    expect(log.asserted).toEqual([3]);
    expect(head).toBe(3);
  });

  it('decides again against the new state when another writer got in between', async () => {
    const log = scriptedLog();
    const streams = new DsStreams(log.service, () => 0, true);
    await streams.load(null, '/s');
    log.intrude(2);
    const seen: number[] = [];
    const head = await streams.write(null, '/s', (state) => {
      seen.push(state!.head);
      return { inputs: [{ type: MESSAGE_TYPE, payload: { text: 'a' } }], done: (after) => after.head };
    });
    expect(seen).toEqual([2, 3, 4]);
    expect(log.asserted).toEqual([3, 4, 5]);
    expect(head).toBe(5);
    expect(log.events.map((e) => e.type).slice(2)).toEqual(['shop.example/other', 'shop.example/other', MESSAGE_TYPE]);
  });

  it('gives up with UNAVAILABLE when the stream keeps changing', async () => {
    const log = scriptedLog();
    const streams = new DsStreams(log.service, () => 0, true);
    log.intrude(1_000);
    await expect(
      streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text: 'a' } }], done: () => 0 })),
    ).rejects.toMatchObject({ code: 'UNAVAILABLE', message: 'the stream kept changing while this write was decided: try again' });
    expect(log.asserted).toHaveLength(50);
  });

  it('passes on refusals other than the offset assertion', async () => {
    const log = scriptedLog();
    const failing = { ...log.service, append: async () => Promise.reject(new RivuletError('PAYLOAD_TOO_LARGE', 'too big')) } as unknown as StreamService;
    const streams = new DsStreams(failing, () => 0, true);
    await expect(
      streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text: 'a' } }], done: () => 0 })),
    ).rejects.toMatchObject({ code: 'PAYLOAD_TOO_LARGE', message: 'too big' });
  });

  it('commits the queued writes of one process to one stream together, each answered with its own head', async () => {
    const log = scriptedLog();
    const streams = new DsStreams(log.service, () => 0, true);
    const write = (text: string) =>
      streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }, { type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    // The first starts at once; the three made while it is under way queue behind it together.
    const heads = await Promise.all([write('first'), write('a'), write('b'), write('c')]);
    expect(heads).toEqual([4, 6, 8, 10]);
    expect(log.asserted).toEqual([3, 5]);
    expect(log.events.slice(2).map((e) => e.payload)).toEqual(['first', 'first', 'a', 'a', 'b', 'b', 'c', 'c'].map((text) => ({ text })));
  });

  it('a write to a stream with nothing queued starts at once, without waiting for a turn', async () => {
    const log = scriptedLog();
    let reads = 0;
    const counted = {
      ...log.service,
      read: (p: string | null, path: string, options: ReadOptions) => (reads++, log.service.read(p, path, options)),
    } as unknown as StreamService;
    const streams = new DsStreams(counted, () => 0, true);
    const write = (text: string) => streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    const first = write('a');
    // Its fold's read was asked for before write() returned; the next write waits its turn.
    expect(reads).toBe(1);
    const second = write('b');
    expect(reads).toBe(1);
    expect(await Promise.all([first, second])).toEqual([3, 4]);
    expect(log.asserted).toEqual([3, 4]);
  });

  it('a write that arrives while a commit is under way waits for the next commit, with the others that arrive meanwhile', async () => {
    const log = scriptedLog();
    let calls = 0;
    const releases: Array<() => void> = [];
    const held = {
      ...log.service,
      append: async (p: string | null, path: string, inputs: readonly EventInput[]) => {
        calls++;
        await new Promise<void>((resolve) => releases.push(resolve));
        return log.service.append(p, path, inputs);
      },
    } as unknown as StreamService;
    const streams = new DsStreams(held, () => 0, true);
    const write = (text: string) => streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    const until = async (done: () => boolean) => {
      while (!done()) await new Promise((resolve) => setImmediate(resolve));
    };
    const first = write('a');
    await until(() => calls === 1);
    const rest = [write('b'), write('c')];
    releases.shift()!();
    await until(() => calls === 2);
    releases.shift()!();
    expect(await Promise.all([first, ...rest])).toEqual([3, 4, 5]);
    expect(log.asserted).toEqual([3, 4]);
  });

  it('without batchWrites (the Worker host) every queued write commits alone, in order', async () => {
    const log = scriptedLog();
    const streams = new DsStreams(log.service, () => 0);
    const write = (text: string) => streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    expect(await Promise.all([write('a'), write('b'), write('c')])).toEqual([3, 4, 5]);
    expect(log.asserted).toEqual([3, 4, 5]);
  });

  it('decides each queued write against the state the earlier ones leave, and answers refusals after the commit', async () => {
    const log = scriptedLog();
    const held = firstAppendHeld(log.service);
    const streams = new DsStreams(held.service, () => 0, true);
    const first = streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text: 'first' } }], done: (after) => after.head }));
    await held.started();
    // Queued behind the first, the closure and the late write are decided and committed together.
    const closing = streams.write(null, '/s', () => ({ inputs: [{ type: CLOSED_TYPE, payload: {} }], done: (after) => `closed at ${after.head}` }));
    // The refusal is decided against the closure still to commit, so it is answered only once that has.
    let eventsWhenRefused = 0;
    const late = streams
      .write(null, '/s', (state) => {
        if (state!.closed) return { answer: `refused at ${state!.head}` };
        return { inputs: [{ type: MESSAGE_TYPE, payload: { text: 'late' } }], done: () => 'appended' };
      })
      .then((answer) => ((eventsWhenRefused = log.events.length), answer));
    held.release();
    expect(await Promise.all([first, closing, late])).toEqual([3, 'closed at 4', 'refused at 4']);
    expect(eventsWhenRefused).toBe(4);
    expect(log.asserted).toEqual([3, 4]);
    expect(log.events.map((e) => e.type).slice(2)).toEqual([MESSAGE_TYPE, CLOSED_TYPE]);
  });

  it('decides a batch again when another writer got in between', async () => {
    const log = scriptedLog();
    const held = firstAppendHeld(log.service);
    const streams = new DsStreams(held.service, () => 0, true);
    const write = (text: string) => streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    const first = write('first');
    await held.started();
    const batch = Promise.all([write('a'), write('b')]);
    // Folded at 3 after the first commits, the batch finds another writer's event at 4.
    log.intrude(1);
    held.release();
    expect(await first).toBe(3);
    expect(await batch).toEqual([5, 6]);
    expect(log.asserted).toEqual([3, 4, 5]);
  });

  it('commits a batch one by one when its append is refused, so that only the bad write fails', async () => {
    const log = scriptedLog();
    const tooBig = (inputs: readonly EventInput[]) => inputs.some((input) => (input.payload as { text?: string }).text === 'huge');
    const picky = {
      ...log.service,
      append: async (p: string | null, path: string, inputs: readonly EventInput[]) => {
        if (tooBig(inputs)) throw new RivuletError('PAYLOAD_TOO_LARGE', 'too big');
        return log.service.append(p, path, inputs);
      },
    } as unknown as StreamService;
    const streams = new DsStreams(picky, () => 0, true);
    const write = (text: string) => streams.write(null, '/s', () => ({ inputs: [{ type: MESSAGE_TYPE, payload: { text } }], done: (after) => after.head }));
    const results = await Promise.allSettled([write('a'), write('huge'), write('c')]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as RivuletError).code))).toEqual([3, 'PAYLOAD_TOO_LARGE', 4]);
    expect(log.events.slice(2).map((e) => e.payload)).toEqual([{ text: 'a' }, { text: 'c' }]);
  });
});
