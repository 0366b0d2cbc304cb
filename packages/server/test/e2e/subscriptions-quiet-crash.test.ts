/**
 * Quiet cursors across `kill -9` (protocol §12.3, §13.2): copy subscriptions whose event types
 * match nothing the load appends move past it in memory, and their rows are stored every 1000
 * offsets, all of a stream's together (engine/delivery/pass-over.ts). After a SIGKILL the stored
 * cursors are at most 1000 behind what was acknowledged; after the restart every subscription
 * copies the matching event exactly once, and nothing of the load before it. The built CLI runs as a
 * child process (Node host only: the Worker host has no process to kill).
 */
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { CommittedEvent } from '@rivulet/contract';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { Api, type EventInput } from '../helpers/http.js';
import { tempDir } from '../helpers/server.js';
import { caughtUp, configured, copiesOn, copyTo } from '../helpers/subscriptions.js';

const SRC = '/quietcrash/src';
const KEYS = ['q0', 'q1', 'q2', 'q3', 'q4'];
const NEVER = 'app/never';
const WRITERS = 8;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(dir: string): Promise<CliServer> {
  const server = await spawnServe(['--data', dir]);
  cleanups.push(() => server.kill('SIGKILL'));
  return server;
}

/** `count` single-event appends of a type no subscription names, from concurrent writers; answers the highest acknowledged offset. */
async function quietLoad(api: Api, count: number): Promise<number> {
  let next = 0;
  let highest = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (next++ < count) {
        const [event] = await api.append(SRC, { type: 'app/other', payload: { n: next } });
        highest = Math.max(highest, event!.offset);
      }
    }),
  );
  return highest;
}

describe('quiet subscriptions across kill -9', () => {
  it('stored quiet cursors trail the acknowledged head by at most 1000, and the matching events are copied exactly once after the restart', async () => {
    const { dir, remove } = await tempDir('rivulet-quietcrash-');
    cleanups.push(remove);
    let server = await start(dir);
    let api = new Api(server.url);
    // One configuration per append: the rows start at five different cursors.
    for (const key of KEYS) {
      await api.append(SRC, configured({ subscriptionKey: key, filter: { eventTypes: [NEVER] }, receiver: copyTo(`/quietcrash/${key}`) }));
    }
    const head = await quietLoad(api, 1600);
    for (const key of KEYS) expect((await caughtUp(api, SRC, key)).acknowledgedOffset).toBe(head);

    server.child.kill('SIGKILL');
    expect((await server.exited).signal).toBe('SIGKILL');
    const db = new Database(join(dir, 'rivulet.db'));
    const stored = db.prepare(`SELECT key, cursor FROM subscription_runtime ORDER BY key`).all() as Array<{ key: string; cursor: number }>;
    db.close();
    expect(stored.map((r) => r.key)).toEqual(KEYS);
    for (const { cursor } of stored) expect(head - cursor).toBeLessThanOrEqual(1000);
    // Stored together: the rows, configured at five different offsets, were written in one go.
    expect(new Set(stored.map((r) => r.cursor)).size).toBe(1);

    server = await start(dir);
    api = new Api(server.url);
    const [matching] = await api.append(SRC, { type: NEVER, payload: { n: 1 } } satisfies EventInput);
    for (const key of KEYS) {
      const row = await caughtUp(api, SRC, key, 10_000);
      expect(row.acknowledgedOffset).toBe(matching!.offset);
      const copies: CommittedEvent[] = await copiesOn(api, `/quietcrash/${key}`);
      expect(copies.map((c) => c.source?.copiedFrom?.[0]?.offset)).toEqual([matching!.offset]);
    }
    await server.kill('SIGTERM');
  }, 60_000);
});
