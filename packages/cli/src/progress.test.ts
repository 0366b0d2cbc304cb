import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startProgress } from './progress.js';

/** A writable that says it is a terminal, collecting what is drawn on it. */
function terminal(isTTY: boolean) {
  const stream = new PassThrough() as PassThrough & { isTTY: boolean; columns: number; cursorTo(): boolean; clearLine(): boolean; moveCursor(): boolean };
  stream.isTTY = isTTY;
  stream.columns = 120;
  stream.cursorTo = () => true;
  stream.clearLine = () => true;
  stream.moveCursor = () => true;
  let text = '';
  stream.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return { stream: stream as unknown as NodeJS.WriteStream, drawn: () => text };
}

describe('startProgress', () => {
  it('draws a bar with the figures on a terminal', () => {
    const t = terminal(true);
    const p = startProgress('export', { unit: 'events', total: 200, stream: t.stream });
    p.advance(50);
    p.advance(50);
    p.stop();
    expect(p.done).toBe(100);
    expect(t.drawn()).toMatch(/export \[.*\] \d+% \d+\/200 events/);
  });

  it('shows a count until a total is known, then the bar', () => {
    const t = terminal(true);
    const p = startProgress('import', { unit: 'events', stream: t.stream });
    expect(t.drawn()).toMatch(/import 0 events/);
    p.total(10);
    p.advance(10);
    p.stop();
    expect(t.drawn()).toMatch(/import \[.*\] 100% 10\/10 events/);
  });

  it('draws nothing when the stream is not a terminal, and still counts', () => {
    const t = terminal(false);
    const p = startProgress('backup', { unit: 'bytes', total: 10, stream: t.stream });
    p.advance(7);
    p.stop();
    expect(p.done).toBe(7);
    expect(t.drawn()).toBe('');
  });

  it('draws nothing when quiet, even on a terminal', () => {
    const t = terminal(true);
    const p = startProgress('backup', { unit: 'bytes', total: 10, stream: t.stream, quiet: true });
    p.advance(3);
    p.stop();
    expect(t.drawn()).toBe('');
  });

  it('stop can be called twice', () => {
    const t = terminal(true);
    const p = startProgress('x', { unit: 'events', total: 1, stream: t.stream });
    p.stop();
    expect(() => p.stop()).not.toThrow();
  });
});
