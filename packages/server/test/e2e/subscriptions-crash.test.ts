/**
 * Copy subscriptions survive `kill -9` (protocol §12.2, §12.7, §12.9, §13.2: copies are
 * exactly-once per run). The built CLI runs as a child process. A source with four copy
 * subscriptions (wildcard, JSONata condition, event types, transform; all `start: beginning`) is
 * appended to by concurrent writers while the server is SIGKILLed repeatedly — three times in the
 * middle of the load, at a varying moment, and once right after a large atomic append was
 * acknowledged, while its copies are being delivered — and restarted on the same data folder each
 * time (a new process on a new port). After the last restart, once every
 * subscription has caught up, every matching durable source event must be on its receiver exactly
 * once, in source-offset order, with no gap, and nothing else but the receiver's created event.
 */
import { afterEach, describe, expect, it } from 'vitest';
import jsonata from 'jsonata';
import type { CommittedEvent } from '@rivulet/contract';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { Api, type EventInput } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import {
  EventType,
  configured,
  copyIdempotencyKey,
  copyTo,
  eventually,
  expectedHop,
  lifetimeOf,
  runtimeOf,
} from '../helpers/subscriptions.js';

const SRC = '/subcrash/src';

interface Sub {
  key: string;
  receiver: string;
  filter?: { eventTypes?: string[]; jsonataCondition?: string };
  transform?: string;
}

const SUBS: Sub[] = [
  { key: 'all', receiver: '/subcrash/all' },
  { key: 'even', receiver: '/subcrash/even', filter: { jsonataCondition: '$exists(payload.n) and payload.n % 2 = 0' } },
  { key: 'typed', receiver: '/subcrash/typed', filter: { eventTypes: ['load.a'] } },
  {
    key: 'shaped',
    receiver: '/subcrash/shaped',
    filter: { eventTypes: ['load.a', 'load.b'] },
    transform: '{"type": "shaped/" & type, "payload": {"n": payload.n, "twice": payload.n * 2}}',
  },
];

/** Small retry knobs; no halt can happen within this test (a halt would be a failure to report). */
const SERVE_ARGS = ['--retry-base-ms', '10', '--retry-max-ms', '50', '--max-delivery-attempts', '100000', '--delivery-timeout-ms', '5000'];
const WRITERS = 6;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A small seeded generator: the kill moments vary, the test does not depend on them. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Load {
  next: number;
  acked: CommittedEvent[];
}

/** Load event number n: some ephemeral, some keyed, some with metadata. */
function eventInput(n: number, w: number): EventInput {
  const input: EventInput = { type: n % 3 === 0 ? 'load.b' : 'load.a', payload: { n, w } };
  if (n % 7 === 3) input.ephemeral = true;
  else if (n % 4 === 1) input.idempotencyKey = `crash-${n}`;
  if (n % 5 === 2) input.metadata = { writer: w, n };
  return input;
}

/**
 * Concurrent writers append batches of 1–3 events (some ephemeral, some keyed, some with metadata)
 * until `enough` events of this round are acknowledged; then `atThreshold` runs. With `keepGoing`
 * the writers go on until their requests fail (the server was killed under them).
 */
async function write(api: Api, load: Load, enough: number, atThreshold: () => void, keepGoing: boolean): Promise<void> {
  let roundAcked = 0;
  let reached = false;
  const writer = async (w: number) => {
    for (let round = 0; keepGoing || !reached; round++) {
      const inputs: EventInput[] = [];
      for (let i = 0; i <= (w + round) % 3; i++) inputs.push(eventInput(load.next++, w));
      let res;
      try {
        res = await api.post(SRC, inputs);
      } catch {
        return; // the server is gone
      }
      if (res.status !== 200) {
        // Only a dying server may refuse; a client mistake is a test bug.
        expect(res.status, res.text).toBeGreaterThanOrEqual(500);
        return;
      }
      const events = (res.body as { events: CommittedEvent[] }).events;
      load.acked.push(...events);
      roundAcked += events.length;
      if (!reached && roundAcked >= enough) {
        reached = true;
        atThreshold();
      }
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
}

async function start(dir: string): Promise<CliServer> {
  const server = await spawnServe(['--data', dir, ...SERVE_ARGS]);
  cleanups.push(() => server.kill('SIGKILL'));
  return server;
}

async function matches(sub: Sub, event: CommittedEvent): Promise<boolean> {
  if (sub.filter?.eventTypes && !sub.filter.eventTypes.includes(event.type)) return false;
  if (sub.filter?.jsonataCondition) return (await jsonata(sub.filter.jsonataCondition).evaluate(event)) === true;
  return true;
}

function shaped(sub: Sub, event: CommittedEvent): Pick<CommittedEvent, 'type' | 'payload' | 'metadata'> {
  const out: Pick<CommittedEvent, 'type' | 'payload' | 'metadata'> = { type: event.type };
  if (event.payload !== undefined) out.payload = event.payload;
  if (event.metadata !== undefined) out.metadata = event.metadata;
  if (sub.transform) {
    const n = (event.payload as { n: number }).n;
    out.type = `shaped/${event.type}`;
    out.payload = { n, twice: n * 2 };
  }
  return out;
}

describe('copy subscriptions across kill -9', () => {
  it('every matching durable source event is on every receiver exactly once, in order, after repeated kill -9', async () => {
    const { dir, remove } = await tempDir('rivulet-subcrash-');
    cleanups.push(remove);
    const random = seeded(20260317);
    const load: Load = { next: 1, acked: [] };

    // Round 0 configures the subscriptions, then the load begins.
    let server = await start(dir);
    let api = new Api(server.url);
    const configures = await api.append(
      SRC,
      SUBS.map((s) =>
        configured({
          subscriptionKey: s.key,
          ...(s.filter ? { filter: s.filter } : {}),
          receiver: copyTo(s.receiver, { start: 'beginning', ...(s.transform ? { jsonataTransform: s.transform } : {}) }),
        }),
      ),
    );
    const generation = new Map(SUBS.map((s, i) => [s.key, configures[i]!.offset]));

    // Three kills under load, at a varying moment after a varying amount of acknowledged events.
    for (const enough of [60, 150, 100]) {
      const victim = server;
      await write(
        api,
        load,
        enough + Math.floor(random() * 40),
        () => {
          setTimeout(() => victim.child.kill('SIGKILL'), Math.floor(random() * 25));
        },
        true,
      );
      expect((await victim.exited).signal).toBe('SIGKILL');
      server = await start(dir);
      api = new Api(server.url);
    }

    // One kill right after a large atomic append is acknowledged, while its copies are being delivered.
    const burst = Array.from({ length: 2500 }, (_, i) => eventInput(load.next++, i % WRITERS));
    const res = await api.post(SRC, burst);
    expect(res.status, res.text).toBe(200);
    load.acked.push(...(res.body as { events: CommittedEvent[] }).events);
    server.child.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');

    // The last process: a little more load, then wait for every subscription to catch up.
    server = await start(dir);
    api = new Api(server.url);
    await write(api, load, 30, () => undefined, false);
    for (const sub of SUBS) {
      await eventually(
        async () => {
          const row = await runtimeOf(api, SRC, sub.key);
          return row && row.lag === 0 && row.attempt === 0 && row.inFlightDeadlineAt === null ? row : undefined;
        },
        `subscription "${sub.key}" to catch up after the last restart`,
        20_000,
      );
    }

    // The source: every acknowledged event where it was acknowledged; only load and configure events.
    const source = await api.readAll(SRC);
    const byOffset = new Map(source.map((e) => [e.offset, e]));
    for (const event of load.acked) {
      if (!event.ephemeral) expect(byOffset.get(event.offset), `acknowledged offset ${event.offset}`).toEqual(event);
    }
    expect(new Set(source.map((e) => e.type))).toEqual(new Set([EventType.created, EventType.subscriptionConfigured, 'load.a', 'load.b']));
    expect(load.acked.filter((e) => !e.ephemeral).length).toBeGreaterThan(400);
    const lifetime = await lifetimeOf(api, SRC);

    for (const sub of SUBS) {
      const expected: CommittedEvent[] = [];
      for (const event of source) if (await matches(sub, event)) expected.push(event);
      expect(expected.length).toBeGreaterThan(100);
      const log = await api.readAll(sub.receiver, { includeEphemeral: true });
      expect(log[0]).toMatchObject({ offset: 1, type: EventType.created, payload: { path: sub.receiver } });
      const copies = log.slice(1);
      // Exactly once, in source-offset order, no gap, nothing else.
      expect(copies.map((c) => c.source?.copiedFrom?.[0]?.offset), `copies on ${sub.receiver}`).toEqual(expected.map((e) => e.offset));
      const gen = generation.get(sub.key)!;
      copies.forEach((copy, i) => {
        const from = expected[i]!;
        expect(copy).toEqual({
          path: sub.receiver,
          offset: i + 2,
          createdAt: copy.createdAt,
          ...shaped(sub, from),
          idempotencyKey: copyIdempotencyKey(sub.key, gen, null, SRC, lifetime.streamId, from.offset),
          source: { copiedFrom: [expectedHop(from, { ...lifetime, subscriptionKey: sub.key, cursorChangedAtSourceOffset: gen })] },
        });
      });
      const core = (await api.state(sub.receiver)).core!;
      expect(core.subscriptions.inbound.bySourcePath[SRC]?.[sub.key]).toMatchObject({
        ...lifetime,
        cursorChangedAtSourceOffset: gen,
        numEventsReceived: copies.length,
      });
    }
    await server.kill('SIGTERM');
  }, 60_000);
});
