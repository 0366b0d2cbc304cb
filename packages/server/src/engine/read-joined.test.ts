/**
 * The read page built by SQLite (`EventRows.rangeJoined`, `readRaw` with `joined`, the
 * text of `http/stream-routes.ts` `pageText`) against the page as it was built before: one stored
 * body per row, joined in JavaScript. Same bytes, same tag, same rules (limit, afterOffset,
 * beforeOffset, type filters, ephemeral events and their retention, never past the committed
 * head), over both test adapters; the Durable Object's SQL is held to the same order by the
 * storage conformance checks (test/storage-checks-sql.ts).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { testStorages } from '../../test/helpers/test-storages.js';
import type { AppendInput } from '../core/append-input.js';
import { pageTag } from '../http/page-tag.js';
import { pageText } from '../http/stream-routes.js';
import { systemTimer } from '../ports/timer.js';
import { StreamActor, type ActorDeps, type ReadRawResult } from './actor.js';
import { defaultEngineConfig } from './config.js';
import { openSchema } from './schema.js';
import { StreamStore } from './stream-store.js';

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

const adapters = testStorages(cleanups, 'rivulet-joined-');

type Query = Parameters<StreamActor['readRaw']>[0];

/** The page text as stream-routes.ts built it before the join moved into SQL. */
function pageBefore(r: ReadRawResult): string {
  return `{"streamId":${JSON.stringify(r.streamId)},"streamMaxOffset":${r.streamMaxOffset},"events":[${r.events.map((e) => e.json).join(',')}]}`;
}

/** The tag as page-tag.ts computed it from the rows before. */
function tagBefore(r: ReadRawResult, q: Query): string | undefined {
  if (r.streamId === null || q.includeEphemeral) return undefined;
  const full = r.events.length === q.limit;
  const closed = q.beforeOffset !== undefined && q.beforeOffset - 1 <= r.streamMaxOffset;
  if (!full && !closed) return undefined;
  return `W/"${r.streamId}.${r.events[0]?.offset ?? 0}.${r.events.at(-1)?.offset ?? 0}.${r.events.length}"`;
}

function expectSamePage(actor: StreamActor, q: Query): ReadRawResult {
  const rows = actor.readRaw(q);
  const joined = actor.readRaw({ ...q, joined: true });
  expect(joined.events).toEqual([]);
  const j = joined.joined!;
  expect({ streamId: joined.streamId, streamMaxOffset: joined.streamMaxOffset }).toEqual({ streamId: rows.streamId, streamMaxOffset: rows.streamMaxOffset });
  expect({ count: j.count, first: j.first, last: j.last }).toEqual({
    count: rows.events.length,
    first: rows.events[0]?.offset ?? 0,
    last: rows.events.at(-1)?.offset ?? 0,
  });
  const text = pageText(joined.streamId, joined.streamMaxOffset, j.json);
  expect(text).toBe(pageBefore(rows));
  expect(JSON.parse(text)).toEqual({ streamId: rows.streamId, streamMaxOffset: rows.streamMaxOffset, events: actor.read(q).events });
  const summary = { streamId: joined.streamId, streamMaxOffset: joined.streamMaxOffset, count: j.count, first: j.first, last: j.last };
  expect(pageTag(summary, q)).toBe(tagBefore(rows, q));
  return rows;
}

const UNICODE = ['ü ✓ 日本語', '😀 astral 𝄞', 'e\u0301 combining', 'line\u2028sep\u2029', 'quote " back \\ slash / tab \t nl \n', '\u0000\u001f controls', '\uFFFD'];

describe.each(adapters)('a read page joined in SQL is the page joined from rows ($name)', ({ open }) => {
  async function setup() {
    const storage = await open();
    openSchema(storage);
    let now = Date.parse('2025-01-01T00:00:00.000Z');
    let ids = 0;
    const deps: ActorDeps = {
      store: new StreamStore(storage),
      clock: { now: () => now },
      random: { next: () => 0.5, uuid: () => `00000000-0000-4000-8000-${(++ids).toString(16).padStart(12, '0')}` },
      timer: systemTimer,
      config: { ...defaultEngineConfig, ephemeralRetentionMs: 60_000 },
    };
    return { storage, deps, advance: (ms: number) => (now += ms) };
  }

  it('over plain, unicode, large and ephemeral events, for every kind of query', async () => {
    const { deps, advance } = await setup();
    const actor = new StreamActor('p', '/mixed', deps);
    const inputs: AppendInput[] = [];
    for (let i = 0; i < 120; i++) {
      const text = UNICODE[i % UNICODE.length]!;
      inputs.push({ type: i % 3 === 0 ? 'app/a' : 'app/b', payload: { i, text, nested: { list: [i, text, null, true, 1.5e-7] } }, ...(i % 5 === 0 && { ephemeral: true as const }) });
    }
    await actor.append(inputs.slice(0, 60), 'public');
    advance(61_000); // the first batch's ephemeral events are now past retention
    await actor.append(inputs.slice(60), 'public');
    // Large payloads, near the event size limit.
    await actor.append([{ type: 'app/big', payload: { blob: 'ä'.repeat(300_000) } }], 'public');
    await actor.append([{ type: 'app/big', payload: { blob: 'z'.repeat(1_000_000) } }], 'public');
    const head = actor.head;
    expect(head).toBeGreaterThan(120);

    const queries: Query[] = [];
    for (const includeEphemeral of [false, true]) {
      for (const [afterOffset, beforeOffset, limit] of [
        [0, undefined, 500],
        [0, undefined, 1],
        [0, undefined, 7],
        [10, 50, 500],
        [10, 50, 13],
        [55, 70, 500],
        [head - 3, undefined, 500],
        [head, undefined, 500],
        [head + 10, undefined, 500],
        [20, 21, 500],
        [20, 20, 500],
        [0, head + 100, 500],
      ] as const) {
        queries.push({ afterOffset, beforeOffset, limit, includeEphemeral });
        queries.push({ afterOffset, beforeOffset, limit, includeEphemeral, eventTypes: ['app/a'] });
        queries.push({ afterOffset, beforeOffset, limit, includeEphemeral, eventTypes: ['app/big', 'app/b', 'no/such'] });
      }
    }
    let ephemeralSeen = 0;
    let eventsSeen = 0;
    for (const q of queries) {
      const rows = expectSamePage(actor, q);
      eventsSeen += rows.events.length;
      ephemeralSeen += rows.events.filter((e) => (JSON.parse(e.json) as { ephemeral?: boolean }).ephemeral === true).length;
    }
    // The queries did cover ephemeral events both hidden by retention and shown, and the big ones.
    expect(ephemeralSeen).toBeGreaterThan(0);
    expect(eventsSeen).toBeGreaterThan(500);
    const all = actor.readRaw({ afterOffset: 0, limit: 500, includeEphemeral: true });
    const firstBatchEphemeral = all.events.filter((e) => e.offset <= 61 && (JSON.parse(e.json) as { ephemeral?: boolean }).ephemeral === true);
    expect(firstBatchEphemeral).toEqual([]);
    expect(actor.readRaw({ afterOffset: head - 2, limit: 500, includeEphemeral: false, joined: true }).joined!.json.length).toBeGreaterThan(1_300_000);
  });

  it('a stream that does not exist, and one that was destroyed, read as an empty page without a tag', async () => {
    const { deps } = await setup();
    const absent = new StreamActor('p', '/absent', deps);
    const q: Query = { afterOffset: 0, limit: 500, includeEphemeral: false };
    expectSamePage(absent, q);
    expect(pageText(null, 0, absent.readRaw({ ...q, joined: true }).joined!.json)).toBe('{"streamId":null,"streamMaxOffset":0,"events":[]}');
    const gone = new StreamActor('p', '/gone', deps);
    await gone.append([{ type: 'app/x', payload: {} }], 'public');
    await gone.destroy();
    expectSamePage(gone, q);
    expectSamePage(gone, { ...q, beforeOffset: 2 });
  });

  it('never reads past the committed head: rows of a group not yet committed stay out of the page', async () => {
    const { deps, storage } = await setup();
    const actor = new StreamActor('p', '/open', deps);
    await actor.append([{ type: 'app/x', payload: { n: 1 } }], 'public');
    const committed = actor.head;
    const pending = actor.append([{ type: 'app/x', payload: { n: 2 } }, { type: 'app/x', payload: { n: 3 } }], 'public');
    // The rows are written (visible to the connection), the group is not committed yet.
    const q: Query = { afterOffset: 0, limit: 500, includeEphemeral: false };
    expect(storage.exec<{ n: number }>(`SELECT max(ofs) AS n FROM events`)[0]!.n).toBe(committed + 2);
    const during = actor.readRaw({ ...q, joined: true });
    expect(during.streamMaxOffset).toBe(committed);
    expect(during.joined!.last).toBe(committed);
    expectSamePage(actor, q);
    await pending;
    const after = expectSamePage(actor, q);
    expect(after.events.at(-1)!.offset).toBe(committed + 2);
  });
});
