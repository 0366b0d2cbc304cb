/**
 * End-to-end over real HTTP: the errors of protocol §7 that a request body can reach (malformed and
 * oversized bodies, CONFLICT, LIMIT_EXCEEDED), each checked for status, code and message, with the
 * limits of protocol §1.1, §3.3 and §4.6 tested on both sides of the bound. Every server here fails
 * its close() if it ever answered INTERNAL. Queries, routes and missing streams: errors-routes.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CoreState } from '@rivulet/contract';
import { expectError, rawRequest, streamRoute, type Api } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const PAUSED = 'events.iterate.com/stream/paused';
const RESUMED = 'events.iterate.com/stream/resumed';
const EMPTY = { streamId: null, streamMaxOffset: 0, events: [] };

const MAX_BODY = 2000;
const MAX_EVENT = 600;
const MAX_STATE = 700;

let server: TestServer;
let api: Api;
/** A server with small operator limits. */
let small: TestServer;

beforeAll(async () => {
  [server, small] = await Promise.all([
    startTestServer(),
    startTestServer({ maxBodyBytes: MAX_BODY, maxEventBytes: MAX_EVENT, maxCoreStateBytes: MAX_STATE }),
  ]);
  api = server.api;
});

afterAll(async () => {
  await Promise.all([server?.close(), small?.close()]);
});

/** A JSON object nested `depth` levels deep ({} is depth 1). */
function nested(depth: number): string {
  return `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
}

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

describe('request bodies', () => {
  it('malformed JSON is INVALID_INPUT', async () => {
    const res = await api.request('POST', streamRoute('/err/json'), {
      body: '{"type": "x",',
      headers: { 'content-type': 'application/json' },
    });
    expectError(res, 'INVALID_INPUT', /^request body is not valid JSON: /);
    expectError(
      await api.request('POST', streamRoute('/err/json'), { body: '', headers: { 'content-type': 'application/json' } }),
      'INVALID_INPUT',
      'request body is empty; expected JSON',
    );
    expectError(
      await api.request('POST', streamRoute('/err/json'), {
        body: new Uint8Array([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d]),
        headers: { 'content-type': 'application/json' },
      }),
      'INVALID_INPUT',
      'request body is not valid UTF-8',
    );
    expect(await api.read('/err/json')).toEqual(EMPTY);
  });

  it('a wrong or missing content-type is INVALID_INPUT; parameters and case are accepted', async () => {
    const body = JSON.stringify({ type: 'x' });
    expectError(
      await api.request('POST', streamRoute('/err/ct'), { body, headers: { 'content-type': 'text/plain' } }),
      'INVALID_INPUT',
      'request body must be JSON: send content-type: application/json (got "text/plain")',
    );
    // A byte body makes fetch send no content-type at all.
    expectError(
      await api.request('POST', streamRoute('/err/ct'), { body: new TextEncoder().encode(body) }),
      'INVALID_INPUT',
      'request body must be JSON: send content-type: application/json (got none)',
    );
    expectError(
      await api.request('POST', streamRoute('/err/ct'), { body, headers: { 'content-type': 'application/jsonx' } }),
      'INVALID_INPUT',
      'got "application/jsonx"',
    );
    expect(await api.read('/err/ct')).toEqual(EMPTY);
    for (const type of ['application/json; charset=utf-8', 'Application/JSON']) {
      const res = await api.request('POST', streamRoute('/err/ct'), { body, headers: { 'content-type': type } });
      expect(res.status, res.text).toBe(200);
    }
  });

  it(`a body above --max-body-bytes is PAYLOAD_TOO_LARGE; exactly the limit is accepted`, async () => {
    const event = JSON.stringify({ type: 'x' });
    const atLimit = event + ' '.repeat(MAX_BODY - event.length);
    expect(utf8(atLimit)).toBe(MAX_BODY);
    expectError(
      await small.api.request('POST', streamRoute('/err/body'), {
        body: `${atLimit} `,
        headers: { 'content-type': 'application/json' },
      }),
      'PAYLOAD_TOO_LARGE',
      `request body is larger than ${MAX_BODY} bytes`,
    );
    // Without content-length (chunked), the cap is enforced while reading.
    expectError(
      await rawRequest(small.url, 'POST', streamRoute('/err/body'), { body: `${atLimit}  `, chunked: true }),
      'PAYLOAD_TOO_LARGE',
      `request body is larger than ${MAX_BODY} bytes`,
    );
    expect(await small.api.read('/err/body')).toEqual(EMPTY);

    const ok = await small.api.request('POST', streamRoute('/err/body'), {
      body: atLimit,
      headers: { 'content-type': 'application/json' },
    });
    expect(ok.status, ok.text).toBe(200);
    const chunked = await rawRequest(small.url, 'POST', streamRoute('/err/body'), { body: atLimit, chunked: true });
    expect(chunked.status, chunked.text).toBe(200);
    expect((await small.api.read('/err/body')).streamMaxOffset).toBe(3);
  });

  it('an event above --max-event-bytes (as committed JSON) is PAYLOAD_TOO_LARGE; exactly the limit is accepted', async () => {
    const path = '/err/event';
    await small.api.append(path, { type: 'seed' });
    // The next event is committed at offset 3 with a createdAt of 24 characters.
    const committedBytes = (s: string) =>
      utf8(JSON.stringify({ path, offset: 3, createdAt: '2026-01-01T00:00:00.000Z', type: 'x', payload: { s } }));
    const base = committedBytes('');
    const fits = 'a'.repeat(MAX_EVENT - base);
    expect(committedBytes(fits)).toBe(MAX_EVENT);

    const over = expectError(
      await small.api.post(path, { type: 'x', payload: { s: `${fits}a` } }),
      'PAYLOAD_TOO_LARGE',
      `an event is ${MAX_EVENT + 1} bytes as JSON; the limit is ${MAX_EVENT} bytes`,
    );
    expect(over.details).toEqual({ bytes: MAX_EVENT + 1, limit: MAX_EVENT });
    // Bytes, not characters: "é" is two bytes in UTF-8.
    const pairs = Math.floor((MAX_EVENT + 1 - base) / 2);
    const wide = 'é'.repeat(pairs) + 'a'.repeat(MAX_EVENT + 1 - base - 2 * pairs);
    expect(committedBytes(wide)).toBe(MAX_EVENT + 1);
    expect(wide.length).toBeLessThan(MAX_EVENT - base);
    expectError(
      await small.api.post(path, { type: 'x', payload: { s: wide } }),
      'PAYLOAD_TOO_LARGE',
      `an event is ${MAX_EVENT + 1} bytes as JSON`,
    );
    // One oversized event rejects its whole batch.
    expectError(
      await small.api.post(path, [{ type: 'small' }, { type: 'x', payload: { s: `${fits}aaaa` } }]),
      'PAYLOAD_TOO_LARGE',
      'the limit is 600 bytes',
    );
    expect((await small.api.read(path)).streamMaxOffset).toBe(2);

    const [stored] = await small.api.append(path, { type: 'x', payload: { s: fits } });
    expect(stored!.offset).toBe(3);
    expect(utf8(JSON.stringify(stored))).toBe(MAX_EVENT);
  });

  it('JSON nesting: 128 levels are accepted, 129 are INVALID_INPUT', async () => {
    const path = '/err/depth';
    const body = (depth: number) => `{"type":"deep","payload":${nested(depth - 1)}}`;
    const send = (text: string) =>
      api.request('POST', streamRoute(path), { body: text, headers: { 'content-type': 'application/json' } });

    expectError(await send(body(129)), 'INVALID_INPUT', 'request body nests JSON deeper than 128 levels');
    expectError(await send(`[${body(128)}]`), 'INVALID_INPUT', 'request body nests JSON deeper than 128 levels');
    expectError(await send(body(5000)), 'INVALID_INPUT', 'request body nests JSON deeper than 128 levels');
    expect(await api.read(path)).toEqual(EMPTY);

    const ok = await send(body(128));
    expect(ok.status, ok.text).toBe(200);
    const okBatch = await send(`[${body(127)}]`);
    expect(okBatch.status, okBatch.text).toBe(200);
    // Brackets inside strings are not nesting.
    const brackets = await send(JSON.stringify({ type: 'text', payload: { s: '{['.repeat(500) } }));
    expect(brackets.status, brackets.text).toBe(200);

    const read = await api.read(path);
    expect(read.events.map((e) => e.offset)).toEqual([1, 2, 3, 4]);
    expect(read.events[1]!.payload).toEqual(JSON.parse(nested(127)));
  });

  it('unknown keys in an event are INVALID_INPUT, also inside a batch; an empty batch too', async () => {
    const path = '/err/keys';
    expectError(await api.post(path, { type: 'x', eventType: 'y' }), 'INVALID_INPUT', 'Unrecognized key: "eventType"');
    expectError(
      await api.post(path, [{ type: 'x' }, { type: 'x', streamPath: '/a' }]),
      'INVALID_INPUT',
      '[1]: Unrecognized key: "streamPath"',
    );
    expectError(await api.post(path, []), 'INVALID_INPUT', 'a batch needs at least one event');
    expectError(await api.post(path, { type: '' }), 'INVALID_INPUT', 'type: Too small');
    expectError(await api.post(path, { type: 'x'.repeat(513) }), 'INVALID_INPUT', 'type: Too big: expected string to have <=512 characters');
    expectError(await api.post(path, { type: 'x', idempotencyKey: '' }), 'INVALID_INPUT', 'idempotencyKey: Too small');
    expectError(
      await api.post(path, { type: 'events.iterate.com/stream/bogus' }),
      'INVALID_INPUT',
      'events[0]: events.iterate.com/stream/bogus is not an event type of the core catalogue',
    );
    expect(await api.read(path)).toEqual(EMPTY);
    const [longest] = await api.append(path, { type: 'x'.repeat(512) });
    expect(longest!.type).toHaveLength(512);
  });

  it('the reserved rivulet-internal/ idempotency prefix is INVALID_INPUT', async () => {
    const path = '/err/reserved';
    const message = 'idempotency keys starting "rivulet-internal/" are reserved for the platform';
    expectError(await api.post(path, { type: 'x', idempotencyKey: 'rivulet-internal/copy:1' }), 'INVALID_INPUT', `events[0]: ${message}`);
    expectError(
      await api.post(path, [{ type: 'x' }, { type: 'x', idempotencyKey: 'rivulet-internal/' }]),
      'INVALID_INPUT',
      `events[1]: ${message}`,
    );
    expect(await api.read(path)).toEqual(EMPTY);
    // Only the exact prefix is reserved.
    const [ok] = await api.append(path, { type: 'x', idempotencyKey: 'rivulet-internal' });
    expect(ok!.idempotencyKey).toBe('rivulet-internal');
  });
});
describe('CONFLICT', () => {
  it('CONFLICT for an idempotency key that names a different event', async () => {
    const path = '/err/idem';
    await api.append(path, { type: 'a', payload: { n: 1 }, idempotencyKey: 'k' });
    const error = expectError(
      await api.post(path, { type: 'a', payload: { n: 2 }, idempotencyKey: 'k' }),
      'CONFLICT',
      'events[0]: idempotency key "k" already names a different event (offset 2)',
    );
    expect(error.details).toEqual({ idempotencyKey: 'k', offset: 2 });
    // Inside one batch as well.
    expectError(
      await api.post(path, [
        { type: 'b', idempotencyKey: 'k2' },
        { type: 'c', idempotencyKey: 'k2' },
      ]),
      'CONFLICT',
      'events[1]: idempotency key "k2" already names a different event (offset 3)',
    );
    expect((await api.read(path)).streamMaxOffset).toBe(2);
  });

  it('CONFLICT for a failed offset assertion; a correct one commits', async () => {
    const path = '/err/offset';
    // A new stream: offset 1 is stream/created, the first caller event is 2.
    const first = expectError(
      await api.post(path, { type: 'a', offset: 1 }),
      'CONFLICT',
      'events[0]: offset assertion failed: expected offset 1, but the next offset is 2',
    );
    expect(first.details).toEqual({ expected: 1, actual: 2 });
    expect(await api.read(path)).toEqual(EMPTY);
    const [a] = await api.append(path, { type: 'a', offset: 2 });
    expect(a!.offset).toBe(2);
    expect(a).not.toHaveProperty('offsetAssertion');
    const batch = await api.append(path, [
      { type: 'b', offset: 3 },
      { type: 'c' },
      { type: 'd', offset: 5 },
    ]);
    expect(batch.map((e) => e.offset)).toEqual([3, 4, 5]);
    expectError(
      await api.post(path, [
        { type: 'e', offset: 6 },
        { type: 'f', offset: 6 },
      ]),
      'CONFLICT',
      'events[1]: offset assertion failed: expected offset 6, but the next offset is 7',
    );
    expectError(
      await api.post(path, { type: 'g', offset: 3 }),
      'CONFLICT',
      'offset assertion failed: expected offset 3, but the next offset is 6',
    );
    expectError(await api.post(path, { type: 'g', offset: 0 }), 'INVALID_INPUT', 'offset: Too small: expected number to be >=1');
    expectError(await api.post(path, { type: 'g', offset: -4 }), 'INVALID_INPUT', 'offset: Too small');
    expect((await api.read(path)).streamMaxOffset).toBe(5);
  });
});

describe('LIMIT_EXCEEDED: the core-state byte limit', () => {
  it('a batch that grows the core state past its limit is LIMIT_EXCEEDED; exactly the limit is accepted; shrinking is allowed', async () => {
    const stateAfterPause = (core: CoreState, reason: string) =>
      utf8(
        JSON.stringify({
          ...core,
          eventCount: core.eventCount + 1,
          maxOffset: core.maxOffset + 1,
          paused: true,
          pauseReason: reason,
        }),
      );
    // Two streams with paths of equal length have states of equal size.
    const over = '/err/state-a';
    const exact = '/err/state-b';
    await small.api.append(over, { type: 'a' });
    await small.api.append(exact, { type: 'a' });
    const core = (await small.api.state(over)).core!;
    const base = stateAfterPause(core, '');
    const reason = 'r'.repeat(MAX_STATE - base);
    expect(stateAfterPause(core, reason)).toBe(MAX_STATE);

    const error = expectError(
      await small.api.post(over, { type: PAUSED, payload: { reason: `${reason}r` } }),
      'LIMIT_EXCEEDED',
      `this append would grow the stream's core state to ${MAX_STATE + 1} bytes; the limit is ${MAX_STATE} bytes`,
    );
    expect(error.details).toEqual({ bytes: MAX_STATE + 1, limit: MAX_STATE });
    expect((await small.api.state(over)).core).toEqual(core);
    expect((await small.api.read(over)).streamMaxOffset).toBe(2);

    const [paused] = await small.api.append(exact, { type: PAUSED, payload: { reason } });
    expect(paused!.offset).toBe(3);
    const exactCore = (await small.api.state(exact)).core!;
    expect(utf8(JSON.stringify(exactCore))).toBe(MAX_STATE);
    expect(exactCore).toMatchObject({ paused: true, pauseReason: reason });
    // Resuming shrinks the state: always allowed.
    const [resumed] = await small.api.append(exact, { type: RESUMED });
    expect(resumed!.offset).toBe(4);
  });
});
