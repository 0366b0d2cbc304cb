/**
 * Acknowledged Durable Streams appends survive `kill -9` and a restart (docs/durable-streams.md
 * "Append", "Speed"): many producers append to two streams at once, so their queued writes are
 * committed together, until the server is SIGKILLed mid-load. A new process on the same data must
 * hold every acknowledged message once, each producer's in order, and still fence each producer
 * where it was acknowledged.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { spawnServe, type CliServer } from '../helpers/cli.js';
import { tempDir } from '../helpers/server.js';

const STREAMS = ['crash/ds-a', 'crash/ds-b'];
const PRODUCERS = 16;
const KILL_AFTER_ACKED = 300;

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(dir: string): Promise<CliServer> {
  const server = await spawnServe(['--data', dir, '--durability', 'full']);
  cleanups.push(() => server.kill('SIGKILL'));
  return server;
}

const json = { 'content-type': 'application/json' };
const producer = (id: string, seq: number) => ({ ...json, 'producer-id': id, 'producer-epoch': '0', 'producer-seq': String(seq) });

interface Acked {
  stream: string;
  id: string;
  seq: number;
}

/** All messages of a stream, read page by page. */
async function readAll(url: string, stream: string): Promise<Array<{ id: string; seq: number }>> {
  const messages: Array<{ id: string; seq: number }> = [];
  let offset = '-1';
  for (;;) {
    const res = await fetch(`${url}/v1/stream/${stream}?offset=${offset}`);
    expect(res.status).toBe(200);
    messages.push(...((await res.json()) as Array<{ id: string; seq: number }>));
    offset = res.headers.get('stream-next-offset')!;
    if (res.headers.get('stream-up-to-date') === 'true') return messages;
  }
}

describe('Durable Streams appends and kill -9', () => {
  it('every acknowledged message survives, once and in its producer’s order; producers stay fenced', async () => {
    const { dir, remove } = await tempDir('rivulet-ds-crash-');
    cleanups.push(remove);
    const first = await start(dir);
    for (const stream of STREAMS) expect((await fetch(`${first.url}/v1/stream/${stream}`, { method: 'PUT', headers: json })).status).toBe(201);

    const acked: Acked[] = [];
    let killed = false;
    await Promise.all(
      Array.from({ length: PRODUCERS }, async (_, p) => {
        const stream = STREAMS[p % STREAMS.length]!;
        const id = `producer-${p}`;
        for (let seq = 0; !killed; seq++) {
          let res: Response;
          try {
            res = await fetch(`${first.url}/v1/stream/${stream}`, { method: 'POST', headers: producer(id, seq), body: JSON.stringify({ id, seq }) });
          } catch {
            return; // the server is gone
          }
          expect(res.status, await res.clone().text()).toBe(200);
          expect(res.headers.get('producer-seq')).toBe(String(seq));
          acked.push({ stream, id, seq });
          if (!killed && acked.length >= KILL_AFTER_ACKED) {
            killed = true;
            first.child.kill('SIGKILL');
          }
        }
      }),
    );
    expect((await first.exited).signal).toBe('SIGKILL');

    const second = await start(dir);
    for (const stream of STREAMS) {
      const messages = await readAll(second.url, stream);
      const keys = messages.map((m) => `${m.id}/${m.seq}`);
      expect(new Set(keys).size, 'no message twice').toBe(keys.length);
      for (const a of acked.filter((x) => x.stream === stream)) expect(keys, `${a.id} seq ${a.seq}`).toContain(`${a.id}/${a.seq}`);
      // Each producer's messages are its sequence from 0, without a hole.
      const byProducer = new Map<string, number[]>();
      for (const m of messages) byProducer.set(m.id, [...(byProducer.get(m.id) ?? []), m.seq]);
      for (const seqs of byProducer.values()) expect(seqs).toEqual(seqs.map((_, i) => i));
      // The producer state came back from the log: the newest stored seq is a duplicate, a gap is refused.
      for (const [id, seqs] of byProducer) {
        const last = seqs[seqs.length - 1]!;
        const again = await fetch(`${second.url}/v1/stream/${stream}`, { method: 'POST', headers: producer(id, last), body: '{}' });
        expect([again.status, again.headers.get('producer-seq')]).toEqual([204, String(last)]);
        const gap = await fetch(`${second.url}/v1/stream/${stream}`, { method: 'POST', headers: producer(id, last + 2), body: '{}' });
        expect([gap.status, gap.headers.get('producer-expected-seq')]).toEqual([409, String(last + 1)]);
      }
    }
  }, 120_000);
});
