import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClient, type RivuletClient } from '@rivulet/client';
import { Capture, rivulet, startTestServer, type TestServer } from './harness.js';

let t: TestServer;
let client: RivuletClient;

beforeEach(async () => {
  t = await startTestServer();
  client = createClient({ url: t.url });
});
afterEach(() => t.dispose());

const offsetsOf = (lines: string[]) => lines.map((l) => Number(l.trim().split(/\s+/)[0]));
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('rivulet tail', () => {
  it('replays, follows live events, and exits 0 when the stream is destroyed', async () => {
    await client.append('/t', [{ type: 'a', payload: { n: 1 } }, { type: 'b' }]);
    const capture = new Capture({ RIVULET_URL: t.url });
    const running = capture.run(['tail', 't']);
    await capture.untilOut(3);
    await client.append('/t', { type: 'c', ephemeral: true });
    await capture.untilOut(4);
    await client.destroy('/t');
    const run = await running;
    expect(run.code).toBe(0);
    expect(offsetsOf(run.out)).toEqual(range(1, 4));
    expect(run.out[1]).toMatch(/^ {5}2 {2}\S+Z {2}a {2}\{"n":1\}$/);
    expect(run.out[3]).toMatch(/c {2}\{\} {2}\(ephemeral\)$/);
    expect(run.stderr).toBe('rivulet tail: stream t was destroyed');
  });

  it('--json names the lifetime of a stream that did not exist when the tail started', async () => {
    const capture = new Capture({ RIVULET_URL: t.url });
    const running = capture.run(['tail', '/fresh', '--json']);
    await client.append('/fresh', { type: 'a' });
    await capture.untilOut(2);
    const { streamId } = await client.getEvents('/fresh', { limit: 1 });
    await client.destroy('/fresh');
    expect((await running).code).toBe(0);
    const lines = capture.out.map((line) => JSON.parse(line) as { offset: number; streamId?: string });
    expect(lines.map((e) => [e.offset, e.streamId])).toEqual([
      [1, streamId],
      [2, streamId],
    ]);
  });

  it('prints NDJSON with --json, from --after, only --types', async () => {
    await client.append('/n', [{ type: 'a' }, { type: 'b' }, { type: 'a' }]);
    const { streamId } = await client.getEvents('/n', { limit: 1 });
    expect(streamId).toEqual(expect.any(String));
    const capture = new Capture({ RIVULET_URL: t.url });
    const running = capture.run(['tail', '/n', '--json', '--after', '2', '--types', 'a']);
    await capture.untilOut(1);
    await client.append('/n', [{ type: 'b' }, { type: 'a' }]);
    await capture.untilOut(2);
    await client.destroy('/n');
    const run = await running;
    expect(run.code).toBe(0);
    const events = run.out.map((line) => JSON.parse(line) as { offset: number; type: string; path: string; streamId: string });
    expect(events.map((e) => [e.offset, e.type, e.path])).toEqual([
      [4, 'a', '/n'],
      [6, 'a', '/n'],
    ]);
    expect(events.map((e) => e.streamId)).toEqual([streamId, streamId]);
  });

  it('stops cleanly when interrupted', async () => {
    const controller = new AbortController();
    await client.append('/i', { type: 'a' });
    const capture = new Capture({ RIVULET_URL: t.url }, { signal: controller.signal });
    const running = capture.run(['tail', '/i']);
    await capture.untilOut(2);
    controller.abort();
    const run = await running;
    expect([run.code, offsetsOf(run.out), run.stderr]).toEqual([0, [1, 2], '']);
  });

  it('says it reconnects after the server restarts, then goes on without duplicates or gaps', async () => {
    await client.append('/re', [{ type: 'a' }, { type: 'b' }]);
    const capture = new Capture({ RIVULET_URL: t.url });
    const running = capture.run(['tail', '/re']);
    await capture.untilOut(3);
    await t.stop();
    await capture.untilErr('rivulet tail: connection lost');
    await t.restart();
    await client.append('/re', [{ type: 'c' }, { type: 'd' }]);
    await capture.untilOut(5);
    await client.destroy('/re');
    const run = await running;
    expect(run.code).toBe(0);
    expect(offsetsOf(run.out)).toEqual(range(1, 5));
    // A server that stops ends its live readers' streams cleanly (protocol §16.9).
    expect(run.err[0]).toMatch(/^rivulet tail: the server ended the stream \(restarting\?\); reconnecting in \d+ ms \(attempt 1\)$/);
    expect(run.err.at(-1)).toBe('rivulet tail: stream /re was destroyed');
  });

  it('fails with UNAVAILABLE when the server cannot be reached at all', async () => {
    const url = t.url;
    await t.stop();
    const run = await rivulet(url, ['tail', '/x']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^rivulet tail: UNAVAILABLE cannot reach /);
  });

  it('reports usage errors with exit 2', async () => {
    const missing = await rivulet(t.url, ['tail']);
    expect([missing.code, missing.err[0]]).toEqual([2, 'rivulet tail: missing PATH']);
    const bad = await rivulet(t.url, ['tail', '/x', '--after=-1']);
    expect([bad.code, bad.err[0]]).toEqual([2, 'rivulet tail: --after must be a whole number, got "-1"']);
    const limit = await rivulet(t.url, ['tail', '/x', '--limit', '3']);
    expect([limit.code, limit.err[0]]).toEqual([2, expect.stringContaining("Unknown option '--limit'")]);
  });
});
