/**
 * NDJSON on standard output in constant memory: a page of lines is written as one chunk and the
 * next is not produced until the stream has drained (backpressure), so a reader slower than the
 * server holds the command back instead of filling its memory. When the reader goes away (EPIPE:
 * `rivulet export | head`) writing stops quietly with OutputClosed.
 */
import type { CommandIO } from '../command.js';

/** The reader of standard output closed the pipe; the command stops without a message. */
export class OutputClosed extends Error {
  constructor() {
    super('standard output was closed');
  }
}

export interface LineWriter {
  /** Writes each string as one line; resolves once the stream can take more. */
  write(lines: readonly string[]): Promise<void>;
  dispose(): void;
}

export function lineWriter(io: CommandIO): LineWriter {
  const stream = io.stdout;
  if (!stream) {
    return {
      write: async (lines) => {
        if (lines.length > 0) io.out(lines.join('\n'));
      },
      dispose: () => undefined,
    };
  }
  let closed: unknown;
  const wakers = new Set<() => void>();
  const onError = (error: unknown) => {
    closed = error;
    for (const wake of wakers) wake();
  };
  stream.on('error', onError);
  return {
    async write(lines) {
      if (closed !== undefined) throw asClosed(closed);
      if (lines.length === 0) return;
      const ready = stream.write(`${lines.join('\n')}\n`);
      if (ready) return;
      await new Promise<void>((resolve) => {
        const wake = () => {
          wakers.delete(wake);
          stream.off('drain', wake);
          resolve();
        };
        wakers.add(wake);
        stream.on('drain', wake);
      });
      if (closed !== undefined) throw asClosed(closed);
    },
    dispose: () => stream.off('error', onError),
  };
}

function asClosed(error: unknown): Error {
  if ((error as { code?: unknown }).code === 'EPIPE') return new OutputClosed();
  return error instanceof Error ? error : new Error(String(error));
}
