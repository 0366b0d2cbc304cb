import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineQueue } from './lines.js';

/** An input of `count` lines, one per chunk, that counts how many it was asked for. */
function lazyInput(count: number) {
  let produced = 0;
  const stream = Readable.from(
    (function* () {
      for (let i = 1; i <= count; i++) {
        produced = i;
        yield `{"n":${i}}\n`;
      }
    })(),
    { objectMode: false, highWaterMark: 1 },
  );
  return { stream, produced: () => produced };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('LineQueue', () => {
  it('stops reading its input while it holds highWater lines, and reads on once they are taken', async () => {
    const input = lazyInput(10_000);
    const queue = new LineQueue(input.stream, 100);
    while (queue.available < 100) await turn();
    // Give an input that was not paused time to run on; a few chunks may already be in the
    // stream's own buffer, but far from all 10 000.
    for (let i = 0; i < 50; i++) await turn();
    expect(input.produced()).toBeLessThan(200);
    // Taking the lines resumes the input: the rest arrives, in order.
    const taken = await queue.take(10_000);
    let numbers = taken.map((l) => l.number);
    for (let more = await queue.take(10_000); more.length > 0; more = await queue.take(10_000)) numbers = numbers.concat(more.map((l) => l.number));
    expect(numbers).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
  });

  it('answers the lines queued now, up to max, and [] at the end', async () => {
    const queue = new LineQueue(Readable.from(['a\nb\r\nc']), 10);
    expect((await queue.take(2)).map((l) => [l.number, l.text])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    expect((await queue.take(2)).map((l) => l.text)).toEqual(['c']);
    expect(await queue.take(2)).toEqual([]);
    expect(queue.bytes).toBe(Buffer.byteLength('a\nb\nc\n'));
  });
});
