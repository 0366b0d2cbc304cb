/**
 * End-to-end over real HTTP: what subscription control events and commands refuse, and that a
 * refusal commits nothing (protocol §3.5, §9.1–§9.3, §9.5, §9.8, §14.6, §7).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import jsonata from 'jsonata';
import type { ErrorCode } from '@rivulet/contract';
import { expectError, type Api, type ApiResponse, type EventInput } from '../helpers/http.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { EventType, command, configured, copyTo, headOf, subscribe } from '../helpers/subscriptions.js';

let server: TestServer;
let api: Api;

beforeAll(async () => {
  server = await startTestServer({ retryBaseMs: 10, retryMaxMs: 50, maxDeliveryAttempts: 3, deliveryTimeoutMs: 5_000 });
  api = server.api;
});

afterAll(async () => {
  await server?.close();
});

/** JSONata's own parse error for an expression (message and position), to compare with the server's answer. */
function jsonataFailure(expression: string): { message: string; position: number } {
  try {
    jsonata(expression);
  } catch (error) {
    const e = error as { message: string; position: number };
    return { message: e.message, position: e.position };
  }
  throw new Error(`"${expression}" compiles; the test needs an invalid expression`);
}

/** Everything an append could have changed on a stream: its whole log (ephemeral included) and state. */
async function snapshot(path: string) {
  return { log: await api.readAll(path, { includeEphemeral: true }), state: await api.state(path) };
}

/** Sends `send`, checks the error, and that nothing changed on the streams named. */
async function refused(
  send: () => Promise<ApiResponse>,
  code: ErrorCode,
  message: string | RegExp,
  unchanged: string[],
): Promise<{ code: ErrorCode; message: string; details?: unknown }> {
  const before = await Promise.all(unchanged.map(snapshot));
  const error = expectError(await send(), code, message);
  expect(await Promise.all(unchanged.map(snapshot))).toEqual(before);
  return error;
}

const HALT = { start: 'now', onFailingEvent: 'halt' } as const;

describe('invalid combinations never commit', () => {
  const src = '/s43/src';
  const recv = '/s43/recv';

  beforeAll(async () => {
    await api.append(src, [{ type: 'x' }, configured({ subscriptionKey: 'k', filter: { eventTypes: ['never'] }, receiver: copyTo(recv) })]);
  });

  const badCondition = 'payload.(';
  const badTransform = '{"type": }';

  const cases: { name: string; payload: Record<string, unknown>; message: string | RegExp }[] = [
    {
      name: 'an itx-call expression ending in a call',
      payload: { receiver: { action: 'itx-call', expression: ['workers', ['get', 'billing']], delivery: HALT } },
      message: 'receiver.expression: a delivery expression must end in the name of the method that receives the events, not in a call (step 1)',
    },
    {
      name: 'a processor-wake expression ending in a call',
      payload: { receiver: { action: 'processor-wake', expression: ['processors', ['get', 'agents']] } },
      message: 'a delivery expression must end in the name of the method',
    },
    {
      name: 'the reserved property name __proto__',
      payload: { receiver: { action: 'itx-call', expression: ['workers', '__proto__', 'processEventBatch'], delivery: HALT } },
      message: 'receiver.expression[1]: "__proto__" is a reserved name and cannot be used in an ITX expression',
    },
    {
      name: 'the reserved name constructor as a called method',
      payload: { receiver: { action: 'itx-call', expression: [['constructor', 1], 'call'], delivery: HALT } },
      message: 'receiver.expression[0]: "constructor" is a reserved name',
    },
    {
      name: 'the reserved name prototype on processor-wake',
      payload: { receiver: { action: 'processor-wake', expression: ['processors', 'prototype'] } },
      message: 'receiver.expression[1]: "prototype" is a reserved name',
    },
    {
      name: 'an ftp:// webhook',
      payload: { receiver: { action: 'webhook-post', url: 'ftp://hooks.example.com/in', delivery: HALT } },
      message: 'receiver.url: webhooks must use http or https, not ftp',
    },
    {
      name: 'a webhook URL that is not absolute',
      payload: { receiver: { action: 'webhook-post', url: 'hooks/in', delivery: HALT } },
      message: 'receiver.url: "hooks/in" is not an absolute URL',
    },
    {
      name: 'a transform on processor-wake',
      payload: { receiver: { action: 'processor-wake', expression: ['processors', 'wake'], jsonataTransform: '$' } },
      message: 'processor-wake takes only "action" and "expression" (got "jsonataTransform")',
    },
    {
      name: 'a delivery start on processor-wake',
      payload: { receiver: { action: 'processor-wake', expression: ['processors', 'wake'], delivery: HALT } },
      message: 'processor-wake takes only "action" and "expression" (got "delivery")',
    },
    {
      name: 'skip on a copy',
      payload: { receiver: { action: 'copy-to-stream', receivingStreamPath: recv, delivery: { start: 'now', onFailingEvent: 'skip' } } },
      message: 'copy-to-stream delivery only supports onFailingEvent "halt": an ordered copy cannot skip an event',
    },
    {
      name: 'the unknown filter key eventType',
      payload: { filter: { eventType: 'x' }, receiver: copyTo(recv) },
      message: /filter: Unrecognized key: "eventType"/,
    },
    {
      name: 'an unknown key beside the receiver',
      payload: { subscriptionKey: 'u', eventTypes: ['x'], receiver: copyTo(recv) },
      message: /Unrecognized key: "eventTypes"/,
    },
    {
      name: 'an unknown receiver action',
      payload: { receiver: { action: 'email', to: 'a@example.com' } },
      message: "receiver.action: Invalid discriminator value. Expected 'processor-wake' | 'copy-to-stream' | 'itx-call' | 'webhook-post'",
    },
    {
      name: 'an empty event type list',
      payload: { filter: { eventTypes: [] }, receiver: copyTo(recv) },
      message: 'filter.eventTypes must list at least one type (omit it to match every type)',
    },
    {
      name: 'the stream itself as the receiver',
      payload: { receiver: copyTo(src) },
      message: `a stream cannot receive from itself (${src})`,
    },
    {
      name: 'the stream itself through ".."',
      payload: { receiver: copyTo('/s43/a/../src') },
      message: `a stream cannot receive from itself (${src})`,
    },
    {
      name: 'the stream itself through "." and surrounding whitespace',
      payload: { receiver: copyTo(' s43/./src ') },
      message: `a stream cannot receive from itself (${src})`,
    },
    {
      name: 'a receiving path escaping the root',
      payload: { receiver: copyTo('/s43/../../x') },
      message: 'receiver.receivingStreamPath: stream path "/s43/../../x" uses ".." to escape the root',
    },
    {
      name: 'a fresh subscription: key',
      payload: { subscriptionKey: 'subscription:99', receiver: copyTo(recv) },
      message: 'subscription keys starting "subscription:" are reserved for generated keys; "subscription:99" is not an existing generated key',
    },
  ];

  for (const c of cases) {
    it(`${c.name} is INVALID_INPUT and commits nothing`, async () => {
      await refused(() => api.post(src, configured(c.payload)), 'INVALID_INPUT', c.message, [src, recv]);
      // Also inside a batch after a valid event: the whole batch is refused.
      await refused(() => api.post(src, [{ type: 'valid' }, configured(c.payload)]), 'INVALID_INPUT', c.message, [src, recv]);
    });
  }

  it('a bad JSONata condition and a bad transform: the message carries JSONata\'s message, details carry its position', async () => {
    const condition = jsonataFailure(badCondition);
    const conditionError = await refused(
      () => api.post(src, configured({ filter: { jsonataCondition: badCondition }, receiver: copyTo(recv) })),
      'INVALID_INPUT',
      `filter.jsonataCondition is not valid JSONata at position ${condition.position}: ${condition.message}`,
      [src, recv],
    );
    expect(conditionError.details).toMatchObject({ field: 'filter.jsonataCondition', position: condition.position });

    const transform = jsonataFailure(badTransform);
    for (const receiver of [
      copyTo(recv, { jsonataTransform: badTransform }),
      { action: 'itx-call', expression: ['workers', 'w'], jsonataTransform: badTransform, delivery: HALT },
      { action: 'webhook-post', url: 'https://hooks.example.com/in', jsonataTransform: badTransform, delivery: HALT },
    ]) {
      const transformError = await refused(
        () => api.post(src, configured({ receiver })),
        'INVALID_INPUT',
        `receiver.jsonataTransform is not valid JSONata at position ${transform.position}: ${transform.message}`,
        [src, recv],
      );
      expect(transformError.details).toMatchObject({ field: 'receiver.jsonataTransform', position: transform.position });
    }

    // The same checks through the convenience command, on the receiving stream.
    const viaCommand = await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, subscriptionKey: 'bad', filter: { jsonataCondition: badCondition } }),
      'INVALID_INPUT',
      condition.message,
      [src, recv],
    );
    expect(viaCommand.details).toMatchObject({ position: condition.position });
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, subscriptionKey: 'bad', jsonataTransform: badTransform }),
      'INVALID_INPUT',
      transform.message,
      [src, recv],
    );
  });

  it('subscribeToEventsFrom refuses a stream subscribing to itself (also via "..") and unknown keys', async () => {
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: '/s43/x/../recv', subscriptionKey: 'self' }),
      'INVALID_INPUT',
      `a stream cannot receive from itself (${recv})`,
      [src, recv],
    );
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, subscriptionKey: 'u', eventType: 'x' }),
      'INVALID_INPUT',
      /Unrecognized key: "eventType"/,
      [src, recv],
    );
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, subscriptionKey: 'u', delivery: { start: 'now', onFailingEvent: 'skip' } }),
      'INVALID_INPUT',
      /Unrecognized key: "onFailingEvent"/,
      [src, recv],
    );
  });

  it('a path that is not well-formed Unicode (a lone surrogate) is INVALID_INPUT wherever a body names a stream, and creates nothing', async () => {
    const lone = '/s43/bad\ud800';
    const message = `stream path ${JSON.stringify(lone)} is not well-formed Unicode: it holds a lone UTF-16 surrogate`;
    await refused(() => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: lone, subscriptionKey: 'lone' }), 'INVALID_INPUT', message, [src, recv]);
    await refused(
      () => api.post(src, configured({ subscriptionKey: 'lone', filter: { eventTypes: ['never'] }, receiver: copyTo(lone) })),
      'INVALID_INPUT',
      `receiver.receivingStreamPath: ${message}`,
      [src, recv],
    );
    const listed = await api.request<{ streams: { path: string }[] }>('GET', '/v1/streams?prefix=/s43');
    expect(listed.body.streams.map((s) => s.path).filter((p) => p.includes('\ufffd') || p.includes('bad'))).toEqual([]);
  });

  it('a cursor-set beyond the head is INVALID_INPUT, raw and through setSubscriptionCursor', async () => {
    const head = await headOf(api, src);
    const beyond = `afterOffset ${head + 1} is beyond this stream's current maximum offset ${head}`;
    await refused(
      () => api.post(src, { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'k', afterOffset: head + 1 } }),
      'INVALID_INPUT',
      beyond,
      [src, recv],
    );
    await refused(() => command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'k', afterOffset: head + 1 }), 'INVALID_INPUT', beyond, [src, recv]);
    await refused(
      () => command(api, src, 'setSubscriptionCursorAndResume', { subscriptionKey: 'k', afterOffset: head + 1 }),
      'INVALID_INPUT',
      beyond,
      [src, recv],
    );
    // Not safe non-negative integers (protocol §9.5).
    for (const afterOffset of [-1, 1.5, '2', null]) {
      await refused(() => command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'k', afterOffset }), 'INVALID_INPUT', 'afterOffset', [src, recv]);
    }
    // The head itself is allowed: an exclusive cursor there owes nothing.
    const ok = await command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'k', afterOffset: head });
    expect(ok.status, ok.text).toBe(200);
  });
});

describe('the bound of 64 subscriptions per source and receiving stream', () => {
  it('the 64th is accepted, the 65th is LIMIT_EXCEEDED both raw and through subscribeToEventsFrom, nothing appended', async () => {
    const src = '/s31/src';
    const recv = '/s31/recv';
    const sub = (i: number): EventInput => configured({ subscriptionKey: `k${i}`, filter: { eventTypes: ['never'] }, receiver: copyTo(recv) });
    await api.append(src, Array.from({ length: 63 }, (_, i) => sub(i + 1)));
    const sixtyFourth = await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k64', filter: { eventTypes: ['never'] } });
    expect(sixtyFourth.subscriptionConfiguredEvent.offset).toBe(65);

    const limit = `${src} already has 64 subscriptions copying to ${recv}; the limit is 64 per source and receiving stream`;
    const raw = await refused(() => api.post(src, sub(65)), 'LIMIT_EXCEEDED', limit, [src, recv]);
    expect(raw.details).toMatchObject({ limit: 64 });
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, subscriptionKey: 'k65', filter: { eventTypes: ['never'] } }),
      'LIMIT_EXCEEDED',
      limit,
      [src, recv],
    );
    // A generated key counts the same, and an alias of the receiving path is the same receiver.
    await refused(
      () => command(api, recv, 'subscribeToEventsFrom', { sourceStreamPath: src, idempotencyKey: 'sixty-five' }),
      'LIMIT_EXCEEDED',
      limit,
      [src, recv],
    );
    await refused(() => api.post(src, configured({ subscriptionKey: 'alias', receiver: copyTo('/s31/./x/../recv') })), 'LIMIT_EXCEEDED', limit, [src, recv]);
    expect(Object.keys((await api.state(src)).core!.subscriptions.outbound.byKey)).toHaveLength(64);

    // Replacing one of the 64 does not count it twice; another receiving stream has its own 64.
    const [replaced] = await api.append(src, configured({ subscriptionKey: 'k1', description: 'replaced', filter: { eventTypes: ['never'] }, receiver: copyTo(recv) }));
    expect(replaced!.offset).toBe(66);
    await subscribe(api, '/s31/other', { sourceStreamPath: src, subscriptionKey: 'k65' });
    // After a removal there is room again.
    const removed = await command(api, recv, 'unsubscribeFromEvents', { sourceStreamPath: src, subscriptionKey: 'k2' });
    expect((removed.body as { status: string }).status).toBe('removed');
    await subscribe(api, recv, { sourceStreamPath: src, subscriptionKey: 'k66', filter: { eventTypes: ['never'] } });
  });
});

describe('authority over subscription facts', () => {
  it('public callers cannot append subscription-delivery-halted or an event carrying source.copiedFrom (FORBIDDEN)', async () => {
    const path = '/s44sub/stream';
    await api.append(path, [{ type: 'x' }, configured({ subscriptionKey: 'k', receiver: copyTo('/s44sub/recv') })]);
    const hop = {
      projectId: null,
      path: '/s44sub/elsewhere',
      streamId: '00000000-0000-4000-8000-000000000000',
      streamCreatedAt: '2026-01-01T00:00:00.000Z',
      offset: 2,
      type: 'x',
      createdAt: '2026-01-01T00:00:00.000Z',
      subscriptionKey: 'k',
      cursorChangedAtSourceOffset: 1,
    };
    const halt = { type: EventType.subscriptionDeliveryHalted, payload: { subscriptionKey: 'k', reason: 'delivery-failed', afterOffset: 0, attempts: 1 } };
    const forbidden: [EventInput, string][] = [
      [halt, `${EventType.subscriptionDeliveryHalted} is a platform fact; public callers may not append it`],
      [{ type: 'x', source: { copiedFrom: [hop] } }, '"source" is platform-authored'],
      [{ type: EventType.subscriptionConfigured, payload: { receiver: copyTo('/s44sub/recv') }, source: { copiedFrom: [hop] } }, '"source" is platform-authored'],
      [{ type: 'x', source: { copiedFrom: [] } }, '"source" is platform-authored'],
    ];
    for (const [event, message] of forbidden) {
      await refused(() => api.post(path, event), 'FORBIDDEN', message, [path]);
      await refused(() => api.post(path, [{ type: 'valid' }, event]), 'FORBIDDEN', message, [path]);
      // On a stream that does not exist, nothing is created.
      await refused(() => api.post('/s44sub/fresh', event), 'FORBIDDEN', message, ['/s44sub/fresh']);
    }
    expect(await api.state('/s44sub/fresh')).toEqual({ core: null, runtime: null });
    // The platform's copy identity is reserved too.
    await refused(
      () => api.post(path, { type: 'x', idempotencyKey: 'rivulet-internal/copy:["k",1,null,"/a","id",2]' }),
      'INVALID_INPUT',
      'reserved for the platform',
      [path],
    );
  });
});

describe('commands on a missing key', () => {
  it('setSubscriptionCursor, resumeSubscription and setSubscriptionCursorAndResume are NOT_FOUND and append nothing', async () => {
    const src = '/s45/src';
    await api.append(src, [{ type: 'x' }, configured({ subscriptionKey: 'present', receiver: copyTo('/s45/recv') })]);
    const calls: [string, Record<string, unknown>][] = [
      ['setSubscriptionCursor', { subscriptionKey: 'missing', afterOffset: 0 }],
      ['resumeSubscription', { subscriptionKey: 'missing' }],
      ['setSubscriptionCursorAndResume', { subscriptionKey: 'missing', afterOffset: 0 }],
    ];
    for (const [method, body] of calls) {
      const error = await refused(() => command(api, src, method, body), 'NOT_FOUND', `no subscription "missing" on ${src}`, [src]);
      expect(error.details).toMatchObject({ subscriptionKey: 'missing' });
      // On a stream that does not exist: NOT_FOUND, and the stream is not created.
      await refused(() => command(api, '/s45/nowhere', method, body), 'NOT_FOUND', 'no subscription "missing" on /s45/nowhere', ['/s45/nowhere']);
    }
    expect(await api.state('/s45/nowhere')).toEqual({ core: null, runtime: null });
  });

  it('raw appends of removed, cursor-set and resumed naming a missing key are NOT_FOUND (protocol §9.8)', async () => {
    const src = '/s45/raw';
    await api.append(src, [{ type: 'x' }, configured({ subscriptionKey: 'present', receiver: copyTo('/s45/raw-recv') })]);
    const raw: EventInput[] = [
      { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'missing' } },
      { type: EventType.subscriptionCursorSet, payload: { subscriptionKey: 'missing', afterOffset: 0 } },
      { type: EventType.subscriptionDeliveryResumed, payload: { subscriptionKey: 'missing' } },
    ];
    for (const event of raw) {
      await refused(() => api.post(src, event), 'NOT_FOUND', `no subscription "missing" on ${src}`, [src]);
      await refused(() => api.post(src, [{ type: 'valid' }, event]), 'NOT_FOUND', 'no subscription "missing"', [src]);
    }
    // A key removed earlier is missing as well.
    await api.append(src, { type: EventType.subscriptionRemoved, payload: { subscriptionKey: 'present' } });
    await refused(
      () => command(api, src, 'setSubscriptionCursor', { subscriptionKey: 'present', afterOffset: 0 }),
      'NOT_FOUND',
      `no subscription "present" on ${src}`,
      [src],
    );
  });
});
