/**
 * Stateful rules of the subscription control events (protocol §9.2, §9.3, §9.5, §9.8, §19.2): every
 * rejection with its code and message, judged before anything is committed.
 */
import {
  EventType,
  Limits,
  RivuletError,
  type CoreState,
  type ErrorCode,
  type JsonObject,
  type OutboundEntry,
  type Receiver,
  type SubscriptionConfiguredPayload,
} from '@rivulet/contract';
import { describe, expect, it } from 'vitest';
import type { AppendInput } from './append-input.js';
import { defaultExpressionLimits } from './expression-budget.js';
import { initialState } from './state.js';
import { checkItxExpression, checkWebhookUrl, createControlRules, type ControlRulesContext } from './subscription-rules.js';

const T0 = '2025-01-01T00:00:00.000Z';

function ctx(overrides: Partial<ControlRulesContext> = {}, connectionKeys: string[] = []): ControlRulesContext {
  return {
    projectId: 'proj',
    path: '/s',
    allowPrivateWebhooks: false,
    expressionLimits: defaultExpressionLimits,
    isConnectionKey: (key) => connectionKeys.includes(key),
    ...overrides,
  };
}

const copyTo = (receivingStreamPath: string, extra: Partial<Receiver> = {}): Receiver =>
  ({ action: 'copy-to-stream', receivingStreamPath, delivery: { start: 'beginning', onFailingEvent: 'halt' }, ...extra }) as Receiver;
const itx = (expression: unknown[], extra: object = {}): Receiver =>
  ({ action: 'itx-call', expression, delivery: { start: 'now', onFailingEvent: 'skip' }, ...extra }) as Receiver;
const webhook = (url: string, extra: object = {}): Receiver =>
  ({ action: 'webhook-post', url, delivery: { start: 'now', onFailingEvent: 'halt' }, ...extra }) as Receiver;
const wake = (expression: unknown[]): Receiver => ({ action: 'processor-wake', expression }) as Receiver;

function stateWith(entries: Record<string, Partial<OutboundEntry> & { receiver?: Receiver }> = {}): CoreState {
  const s = initialState({ projectId: 'proj', path: '/s', streamId: 'sid', createdAt: T0 });
  const byKey: Record<string, OutboundEntry> = {};
  let offset = 2;
  for (const [key, { receiver, ...rest }] of Object.entries(entries)) {
    byKey[key] = {
      configuration: { subscriptionKey: key, receiver: receiver ?? copyTo('/r') },
      configuredAtOffset: offset++,
      configuredAt: T0,
      ...rest,
    };
  }
  return { ...s, maxOffset: 10, eventCount: 10, subscriptions: { ...s.subscriptions, outbound: { byKey } } };
}

const configure = (payload: Omit<SubscriptionConfiguredPayload, 'receiver'> & { receiver: Receiver }): AppendInput => ({
  type: EventType.subscriptionConfigured,
  payload: payload as unknown as JsonObject,
});
const control = (type: string, payload: JsonObject): AppendInput => ({ type, payload });

/** As decideAppend applies the rules: normalise (stateless), then check against the state; answers what is committed. */
function check(input: AppendInput, state: CoreState = stateWith(), head = 10, context: ControlRulesContext = ctx()): AppendInput {
  const rules = createControlRules(context);
  const normalized = rules.normalize(input);
  rules.check(normalized, state, head);
  return normalized;
}

function rejected(fn: () => unknown, code: ErrorCode, message: RegExp | string): RivuletError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(RivuletError);
  const error = caught as RivuletError;
  expect(error.code).toBe(code);
  if (typeof message === 'string') expect(error.message).toBe(message);
  else expect(error.message).toMatch(message);
  return error;
}

const payloadOf = (input: AppendInput) => input.payload as unknown as SubscriptionConfiguredPayload;

describe('configure: keys', () => {
  it('accepts an ordinary explicit key and a keyless configure', () => {
    expect(payloadOf(check(configure({ subscriptionKey: 'mine', receiver: copyTo('/r') }))).subscriptionKey).toBe('mine');
    expect(payloadOf(check(configure({ receiver: copyTo('/r') })))).not.toHaveProperty('subscriptionKey');
  });

  it('refuses a reserved "subscription:" key that is not an existing generated key', () => {
    rejected(
      () => check(configure({ subscriptionKey: 'subscription:5', receiver: copyTo('/r') })),
      'INVALID_INPUT',
      'subscription keys starting "subscription:" are reserved for generated keys; "subscription:5" is not an existing generated key',
    );
    // an existing key of that name that was not generated does not unlock it
    const explicit = stateWith({ 'subscription:5': {} });
    rejected(() => check(configure({ subscriptionKey: 'subscription:5', receiver: copyTo('/r') }), explicit), 'INVALID_INPUT', /reserved for generated keys/);
  });

  it('accepts naming an existing generated key (replace or move it)', () => {
    const state = stateWith({ 'subscription:5': { subscriptionKeyWasGenerated: true } });
    expect(() => check(configure({ subscriptionKey: 'subscription:5', receiver: copyTo('/other') }), state)).not.toThrow();
  });

  it('refuses a key held by a live connection (CONFLICT), explicit or generated', () => {
    const context = ctx({}, ['live-1', 'subscription:11']);
    rejected(
      () => check(configure({ subscriptionKey: 'live-1', receiver: copyTo('/r') }), stateWith(), 10, context),
      'CONFLICT',
      'subscription key "live-1" is held by a live connection on /s',
    );
    // the keyless configure at head 10 would generate "subscription:11"
    rejected(() => check(configure({ receiver: copyTo('/r') }), stateWith(), 10, context), 'CONFLICT', /"subscription:11" is held by a live connection/);
    expect(() => check(configure({ receiver: copyTo('/r') }), stateWith(), 11, context)).not.toThrow();
  });
});

describe('configure: JSONata', () => {
  it('refuses a bad condition with its position in the details', () => {
    const error = rejected(
      () => check(configure({ subscriptionKey: 'k', filter: { jsonataCondition: 'payload.n = (' }, receiver: copyTo('/r') })),
      'INVALID_INPUT',
      /^filter\.jsonataCondition is not valid JSONata at position \d+: /,
    );
    expect(error.details).toMatchObject({ field: 'filter.jsonataCondition', position: expect.any(Number) as number });
    expect((error.details as { jsonataCode?: unknown }).jsonataCode).toEqual(expect.any(String));
  });

  it.each([
    ['copy-to-stream', copyTo('/r', { jsonataTransform: '{"type": ' } as Partial<Receiver>)],
    ['itx-call', itx(['w', 'm'], { jsonataTransform: '{"type": ' })],
    ['webhook-post', webhook('https://example.com/hook', { jsonataTransform: '{"type": ' })],
  ])('refuses a bad transform on %s', (_action, receiver) => {
    const error = rejected(
      () => check(configure({ subscriptionKey: 'k', receiver })),
      'INVALID_INPUT',
      /^receiver\.jsonataTransform is not valid JSONata/,
    );
    expect(error.details).toMatchObject({ field: 'receiver.jsonataTransform' });
  });

  it('accepts valid condition and transform', () => {
    expect(() =>
      check(configure({ subscriptionKey: 'k', filter: { jsonataCondition: 'payload.n > 1' }, receiver: itx(['w', 'm'], { jsonataTransform: '{"payload": payload}' }) })),
    ).not.toThrow();
  });
});

describe('configure: ITX expressions', () => {
  it('refuses an expression ending in a call', () => {
    rejected(
      () => check(configure({ subscriptionKey: 'k', receiver: itx(['workers', ['get', 'billing']]) })),
      'INVALID_INPUT',
      'receiver.expression: a delivery expression must end in the name of the method that receives the events, not in a call (step 1)',
    );
    rejected(() => check(configure({ subscriptionKey: 'k', receiver: wake(['processors', ['get', 'p']]) })), 'INVALID_INPUT', /must end in the name of the method/);
  });

  it.each(['__proto__', 'constructor', 'prototype'])('refuses the reserved name %s as a property or a method', (name) => {
    rejected(
      () => check(configure({ subscriptionKey: 'k', receiver: itx([name, 'm']) })),
      'INVALID_INPUT',
      `receiver.expression[0]: "${name}" is a reserved name and cannot be used in an ITX expression`,
    );
    rejected(() => check(configure({ subscriptionKey: 'k', receiver: itx(['workers', [name, 'x'], 'm']) })), 'INVALID_INPUT', `receiver.expression[1]: "${name}" is a reserved name and cannot be used in an ITX expression`);
    rejected(() => check(configure({ subscriptionKey: 'k', receiver: wake(['processors', name]) })), 'INVALID_INPUT', `receiver.expression[1]: "${name}" is a reserved name and cannot be used in an ITX expression`);
  });

  it('refuses call arguments that are not JSON', () => {
    expect(() => checkItxExpression(['workers', ['get', 10n as unknown as string], 'm'], 'receiver.expression')).toThrow(
      'receiver.expression[1][1]: call arguments must be JSON',
    );
  });

  it('accepts a well-formed expression', () => {
    expect(() => check(configure({ subscriptionKey: 'k', receiver: itx(['workers', ['get', 'billing'], 'processEventBatch']) }))).not.toThrow();
    expect(() => check(configure({ subscriptionKey: 'k', receiver: wake(['processors', ['get', 'agents'], 'wakeStreamProcessor']) }))).not.toThrow();
  });
});

describe('configure: webhook URLs', () => {
  it.each([
    ['ftp://example.com/hook', 'receiver.url: webhooks must use http or https, not ftp'],
    ['file:///etc/passwd', 'receiver.url: webhooks must use http or https, not file'],
    ['not a url', 'receiver.url: "not a url" is not an absolute URL'],
    ['/relative/hook', 'receiver.url: "/relative/hook" is not an absolute URL'],
  ])('refuses %s', (url, message) => {
    rejected(() => check(configure({ subscriptionKey: 'k', receiver: webhook(url) })), 'INVALID_INPUT', message);
  });

  const privateUrls = [
    'http://127.0.0.1/hook',
    'http://127.1/hook',
    'http://2130706433/hook',
    'http://0x7f000001/hook',
    'http://0x7f.1/hook',
    'http://0177.0.0.1/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::ffff:7f00:1]/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://10.1.2.3/hook',
    'http://192.168.0.10:8080/hook',
    'http://172.16.5.4/hook',
    'http://0.0.0.0/hook',
    'http://[::]/hook',
    'http://[fd00:ec2::254]/hook',
    'http://[fe80::1]/hook',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://METADATA.GOOGLE.INTERNAL./x',
    'http://localhost:3000/hook',
    'http://api.localhost/hook',
  ];

  it.each(privateUrls)('refuses the private address %s when private webhooks are not allowed', (url) => {
    const error = rejected(() => check(configure({ subscriptionKey: 'k', receiver: webhook(url) })), 'INVALID_INPUT', /^receiver\.url: .* is a loopback, private, link-local or metadata address/);
    expect(error.message).toContain('--allow-private-webhooks');
  });

  it.each(privateUrls)('accepts %s when private webhooks are allowed', (url) => {
    expect(() => check(configure({ subscriptionKey: 'k', receiver: webhook(url) }), stateWith(), 10, ctx({ allowPrivateWebhooks: true }))).not.toThrow();
  });

  it.each(['https://example.com/hook', 'http://8.8.8.8/x', 'http://172.32.0.1/x', 'http://[2606:4700:4700::1111]/x', 'https://hooks.example.org:8443/a?b=c'])(
    'accepts the public address %s',
    (url) => {
      expect(() => check(configure({ subscriptionKey: 'k', receiver: webhook(url) }))).not.toThrow();
    },
  );

  it('stores the normalised URL', () => {
    const out = check(configure({ subscriptionKey: 'k', receiver: webhook('HTTPS://Example.COM:443/a/../hook') }));
    expect(payloadOf(out).receiver).toMatchObject({ url: 'https://example.com/hook' });
    expect(checkWebhookUrl('http://127.1/', true, 'url')).toBe('http://127.0.0.1/');
  });
});

describe('configure: copy-to-stream paths and bounds', () => {
  it.each(['/s', 's', '/x/../s', '/./s', ' /s '])('refuses copying to itself (%s)', (path) => {
    rejected(() => check(configure({ subscriptionKey: 'k', receiver: copyTo(path) })), 'INVALID_INPUT', 'a stream cannot receive from itself (/s)');
  });

  it('stores the receiving path canonicalised', () => {
    expect(payloadOf(check(configure({ subscriptionKey: 'k', receiver: copyTo('r/./x/../y') }))).receiver).toMatchObject({ receivingStreamPath: '/r/y' });
  });

  function withCopies(n: number, to = '/r'): CoreState {
    const entries: Record<string, { receiver: Receiver }> = {};
    for (let i = 0; i < n; i++) entries[`c${i}`] = { receiver: copyTo(to) };
    entries.other = { receiver: copyTo('/elsewhere') };
    entries.hook = { receiver: webhook('https://example.com/') };
    return stateWith(entries);
  }

  it(`allows ${Limits.subscriptionsPerPair} subscriptions per source→receiver pair; the next one is LIMIT_EXCEEDED`, () => {
    expect(() => check(configure({ subscriptionKey: 'new', receiver: copyTo('/r') }), withCopies(Limits.subscriptionsPerPair - 1))).not.toThrow();
    const error = rejected(
      () => check(configure({ subscriptionKey: 'new', receiver: copyTo('/r') }), withCopies(Limits.subscriptionsPerPair)),
      'LIMIT_EXCEEDED',
      `/s already has ${Limits.subscriptionsPerPair} subscriptions copying to /r; the limit is ${Limits.subscriptionsPerPair} per source and receiving stream`,
    );
    expect(error.details).toEqual({ limit: Limits.subscriptionsPerPair });
    // a keyless configure counts too, and so does an alias of the receiving path
    rejected(() => check(configure({ receiver: copyTo('/x/../r') }), withCopies(Limits.subscriptionsPerPair)), 'LIMIT_EXCEEDED', /already has 64 subscriptions copying to \/r/);
  });

  it('replacing an existing key of a full pair does not count it twice; other receivers are not limited', () => {
    const full = withCopies(Limits.subscriptionsPerPair);
    expect(() => check(configure({ subscriptionKey: 'c3', receiver: copyTo('/r', { delivery: { start: 'now', onFailingEvent: 'halt' } } as Partial<Receiver>) }), full)).not.toThrow();
    expect(() => check(configure({ subscriptionKey: 'new', receiver: copyTo('/another') }), full)).not.toThrow();
    expect(() => check(configure({ subscriptionKey: 'other', receiver: copyTo('/r') }), withCopies(Limits.subscriptionsPerPair - 1))).not.toThrow();
  });
});

describe('normalize (stateless) and check (stateful)', () => {
  const rules = createControlRules(ctx());

  it('normalize refuses what can never be valid, without any state', () => {
    expect(() => rules.normalize(configure({ subscriptionKey: 'k', filter: { jsonataCondition: '(' }, receiver: copyTo('/r') }))).toThrow(RivuletError);
    expect(() => rules.normalize(configure({ subscriptionKey: 'k', receiver: copyTo('/x/../s') }))).toThrow('a stream cannot receive from itself (/s)');
    expect(() => rules.normalize(configure({ subscriptionKey: 'k', receiver: webhook('http://127.1/') }))).toThrow(/loopback, private/);
    expect(() => rules.normalize(configure({ subscriptionKey: 'k', receiver: itx(['w', ['m']]) }))).toThrow(/must end in the name of the method/);
  });

  it('normalize is idempotent, so a retried request compares equal to the stored event', () => {
    const input = configure({ subscriptionKey: 'k', receiver: webhook('HTTPS://Example.COM/a/../b') });
    const once = rules.normalize(input);
    expect(rules.normalize(once)).toEqual(once);
    const copy = rules.normalize(configure({ subscriptionKey: 'k', receiver: copyTo('r/./x/../y') }));
    expect(rules.normalize(copy)).toEqual(copy);
  });

  it('normalize leaves other events and copies alone', () => {
    const event: AppendInput = { type: 'app/x', payload: { receiver: 'x' } };
    expect(rules.normalize(event)).toBe(event);
    const copied: AppendInput = { type: EventType.subscriptionConfigured, payload: { receiver: 'not even valid' }, source: { copiedFrom: [] } };
    expect(rules.normalize(copied)).toBe(copied);
  });

  it('check judges keys and bounds only against the state it is given', () => {
    const input = rules.normalize(configure({ subscriptionKey: 'subscription:5', receiver: copyTo('/r') }));
    expect(() => rules.check(input, stateWith(), 10)).toThrow(/reserved for generated keys/);
    expect(() => rules.check(input, stateWith({ 'subscription:5': { subscriptionKeyWasGenerated: true } }), 10)).not.toThrow();
  });
});

describe('commands on existing keys', () => {
  const state = stateWith({ k: {}, wake: { receiver: wake(['processors', ['get', 'p'], 'wakeStreamProcessor']) } });

  it.each([
    [EventType.subscriptionRemoved, { subscriptionKey: 'missing', reason: 'requested' }],
    [EventType.subscriptionCursorSet, { subscriptionKey: 'missing', afterOffset: 1 }],
    [EventType.subscriptionDeliveryResumed, { subscriptionKey: 'missing' }],
    [EventType.subscriptionDeliveryHalted, { subscriptionKey: 'missing', reason: 'delivery-failed', afterOffset: 0, attempts: 1 }],
  ])('%s on a missing key is NOT_FOUND', (type, payload) => {
    const error = rejected(() => check(control(type, payload), state), 'NOT_FOUND', 'no subscription "missing" on /s');
    expect(error.details).toEqual({ subscriptionKey: 'missing' });
  });

  it.each([
    [EventType.subscriptionRemoved, { subscriptionKey: 'k', reason: 'requested' }],
    [EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 3 }],
    [EventType.subscriptionDeliveryResumed, { subscriptionKey: 'k' }],
  ])('%s on an existing key passes unchanged', (type, payload) => {
    const input = control(type, payload);
    expect(check(input, state)).toBe(input);
  });

  it('a cursor-set beyond the head is INVALID_INPUT; at the head it is accepted', () => {
    const error = rejected(
      () => check(control(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 11 }), state, 10),
      'INVALID_INPUT',
      "afterOffset 11 is beyond this stream's current maximum offset 10",
    );
    expect(error.details).toEqual({ afterOffset: 11, maxOffset: 10 });
    expect(() => check(control(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 10 }), state, 10)).not.toThrow();
    expect(() => check(control(EventType.subscriptionCursorSet, { subscriptionKey: 'k', afterOffset: 0 }), state, 10)).not.toThrow();
  });

  it('a cursor-set on a processor-wake subscription is INVALID_INPUT', () => {
    rejected(
      () => check(control(EventType.subscriptionCursorSet, { subscriptionKey: 'wake', afterOffset: 1 }), state),
      'INVALID_INPUT',
      'subscription "wake" wakes a hosted processor, which owns its checkpoint: its cursor cannot be set',
    );
  });

  it('copied events are data: no rule applies to them', () => {
    const input: AppendInput = {
      type: EventType.subscriptionCursorSet,
      payload: { subscriptionKey: 'missing', afterOffset: 999 },
      source: { copiedFrom: [] },
    };
    expect(check(input, state)).toBe(input);
  });

  it('other events pass unchanged', () => {
    const input: AppendInput = { type: 'app/thing', payload: { subscriptionKey: 'missing' } };
    expect(check(input, state)).toBe(input);
  });
});
