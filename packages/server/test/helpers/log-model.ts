/**
 * The generated commands and the model of the log property tests (log-properties.test.ts, protocol
 * §3.2, §4.1–§4.5): fast-check arbitraries of command sequences (batches of caller events, some
 * ephemeral, some with repeated idempotency keys or offset assertions; pause/resume; destroys;
 * actor reloads; several appends in one turn), and a small model that predicts each batch: the
 * offsets it gets, which inputs answer a stored event, or which typed rejection it meets.
 */
import { EventType, type CommittedEvent, type ErrorCode, type EventInput } from '@rivulet/contract';
import fc from 'fast-check';

// ---- generated commands ----

type OffsetAssertion = 'none' | 'next' | 'wrong';

export type InputSpec =
  | {
      kind: 'event';
      type: string;
      payload: 'none' | 'ab' | 'ba';
      n: number;
      metadata: boolean;
      key: string | undefined;
      ephemeral: boolean;
      offset: OffsetAssertion;
    }
  | { kind: 'pause'; reason: string | undefined; key: string | undefined }
  | { kind: 'resume'; key: string | undefined }
  | { kind: 'ephemeral-control' };

export type Step = { kind: 'appends'; batches: InputSpec[][] } | { kind: 'destroy' } | { kind: 'reload' };

const keys = ['k0', 'k1', 'k2', 'k3'] as const;
/** Mostly no key; now and then one of the shared keys, usually with a body it does not name. */
const key = fc.oneof(
  { weight: 6, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.constantFrom(...keys) },
);

const offsetAssertion = fc.oneof(
  { weight: 20, arbitrary: fc.constant('none' as const) },
  { weight: 4, arbitrary: fc.constant('next' as const) },
  { weight: 1, arbitrary: fc.constant('wrong' as const) },
);

/** Any caller event; a key, when drawn, rarely matches the body it was first used with. */
const anyEvent = fc.record({
  kind: fc.constant('event' as const),
  type: fc.constantFrom('app/a', 'app/b'),
  payload: fc.constantFrom('none' as const, 'ab' as const, 'ba' as const),
  n: fc.integer({ min: 0, max: 1 }),
  metadata: fc.boolean(),
  key,
  ephemeral: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
  offset: offsetAssertion,
});

/** The one body each key usually carries (its payload keys in either order): repeats are common. */
const keyedEvent = fc
  .record({ index: fc.nat({ max: keys.length - 1 }), payload: fc.constantFrom('ab' as const, 'ba' as const), offset: offsetAssertion })
  .map(({ index, payload, offset }) => ({
    kind: 'event' as const,
    type: 'app/keyed',
    payload,
    n: index,
    metadata: false,
    key: keys[index],
    ephemeral: index === 3,
    offset,
  }));

const inputSpec: fc.Arbitrary<InputSpec> = fc.oneof(
  { weight: 10, arbitrary: anyEvent },
  { weight: 6, arbitrary: keyedEvent },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('pause' as const), reason: fc.option(fc.constantFrom('r1', 'r2'), { nil: undefined }), key }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('resume' as const), key }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'ephemeral-control' as const }) },
);

/** Batches; an invalid input (an ephemeral control event) only now and then. */
const batch = fc
  .tuple(fc.array(inputSpec, { minLength: 1, maxLength: 5 }), fc.nat({ max: 9 }))
  .map(([specs, dice]) => (dice === 0 ? specs : specs.filter((spec) => spec.kind !== 'ephemeral-control')))
  .filter((specs) => specs.length > 0);

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 10, arbitrary: fc.record({ kind: fc.constant('appends' as const), batches: fc.array(batch, { minLength: 1, maxLength: 1 }) }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('appends' as const), batches: fc.array(batch, { minLength: 2, maxLength: 4 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'destroy' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'reload' as const }) },
);

export const scenario = fc.record({
  projectId: fc.constantFrom<string | null>(null, 'proj'),
  // How far the streams row's checkpoint may lag (storage format 3): small values load through
  // the derivation from event rows after nearly every step.
  checkpointEvery: fc.constantFrom(1, 2, 3, 1000),
  steps: fc.array(step, { minLength: 1, maxLength: 25 }),
});

// ---- the model ----

/** Key-order independent JSON of an event body (protocol §4.2). */
export function bodyOf(e: { type: string; payload?: unknown; metadata?: unknown; ephemeral?: true | undefined }): string {
  const sort = (v: unknown): unknown =>
    v === null || typeof v !== 'object' || Array.isArray(v)
      ? v
      : Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, x]) => [k, sort(x)]));
  return JSON.stringify(sort({ type: e.type, payload: e.payload, metadata: e.metadata, ephemeral: e.ephemeral }));
}

export interface Model {
  exists: boolean;
  head: number;
  paused: boolean;
  keys: Map<string, { body: string; offset: number }>;
  /** Committed events of the current lifetime by offset, as answered by appends or read back. */
  events: Map<number, CommittedEvent>;
  streamIds: string[];
}

export const emptyModel = (streamIds: string[] = []): Model => ({
  exists: false,
  head: 0,
  paused: false,
  keys: new Map(),
  events: new Map(),
  streamIds,
});

export type Expected = { ok: false; code: ErrorCode } | { ok: true; offsets: number[]; created: boolean };

/**
 * Turns specs into inputs and predicts the outcome; on predicted success the model advances
 * (events are filled in later from the actual answers).
 */
export function plan(model: Model, specs: InputSpec[]): { inputs: EventInput[]; expected: Expected } {
  const created = !model.exists;
  let head = model.head + (created ? 1 : 0);
  let paused = created ? false : model.paused;
  const keys = new Map(model.keys);
  const inputs: EventInput[] = [];
  const offsets: number[] = [];
  let failure: ErrorCode | undefined;
  let invalid = false;

  for (const spec of specs) {
    let input: EventInput;
    switch (spec.kind) {
      case 'event': {
        input = { type: spec.type };
        if (spec.payload !== 'none') input.payload = spec.payload === 'ab' ? { a: spec.n, b: 'x' } : { b: 'x', a: spec.n };
        if (spec.metadata) input.metadata = { via: 'property' };
        if (spec.key !== undefined) input.idempotencyKey = spec.key;
        if (spec.ephemeral) input.ephemeral = true;
        if (spec.offset === 'next') input.offset = head + 1;
        if (spec.offset === 'wrong') input.offset = head + 2;
        break;
      }
      case 'pause':
        input = { type: EventType.paused, payload: spec.reason === undefined ? {} : { reason: spec.reason } };
        if (spec.key !== undefined) input.idempotencyKey = spec.key;
        break;
      case 'resume':
        input = { type: EventType.resumed, payload: {} };
        if (spec.key !== undefined) input.idempotencyKey = spec.key;
        break;
      case 'ephemeral-control':
        input = { type: EventType.paused, payload: {}, ephemeral: true };
        invalid = true;
        break;
    }
    inputs.push(input);
    if (failure || invalid) continue;
    const body = bodyOf(input);
    const prior = input.idempotencyKey === undefined ? undefined : keys.get(input.idempotencyKey);
    if (prior) {
      if (prior.body !== body) failure = 'CONFLICT';
      else if (input.offset !== undefined && input.offset !== prior.offset) failure = 'CONFLICT';
      else offsets.push(prior.offset);
      continue;
    }
    if (paused && input.type !== EventType.resumed) {
      failure = 'PRECONDITION_FAILED';
      continue;
    }
    if (input.offset !== undefined && input.offset !== head + 1) {
      failure = 'CONFLICT';
      continue;
    }
    head++;
    offsets.push(head);
    if (input.idempotencyKey !== undefined) keys.set(input.idempotencyKey, { body, offset: head });
    if (input.type === EventType.paused) paused = true;
    if (input.type === EventType.resumed) paused = false;
  }

  // The edge checks every input before anything is decided.
  if (invalid) return { inputs, expected: { ok: false, code: 'INVALID_INPUT' } };
  if (failure) return { inputs, expected: { ok: false, code: failure } };
  model.exists = true;
  model.head = head;
  model.paused = paused;
  model.keys = keys;
  return { inputs, expected: { ok: true, offsets, created } };
}
