/**
 * Input lines for `append --file` and `import --file`: a file or standard input split by
 * node:readline, numbered from 1, held in a bounded queue. The queue pauses the input when it is
 * full and resumes it when drained, so a file of any size is read in constant memory; `take`
 * answers the lines that are there *now*, which lets a caller batch whatever arrived while its
 * previous request was out and still send a lone line at once when the input is idle (a `tail`
 * piped in).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { UsageError } from '../command.js';
import type { RemoteIO } from '../commands/remote.js';

export interface Line {
  /** 1 for the first line of the input. */
  number: number;
  text: string;
}

export interface Input {
  stream: Readable;
  /** How the input is named in messages: the file, or "standard input". */
  name: string;
  /** The size in bytes when the input is a regular file. */
  size?: number;
}

/** Opens FILE, or standard input for "-"; a file that cannot be opened is a usage error. */
export async function openInput(file: string, io: RemoteIO): Promise<Input> {
  if (file === '-') {
    const stream = io.stdin ?? (io.readStdin ? Readable.from([await io.readStdin()]) : process.stdin);
    return { stream, name: 'standard input' };
  }
  try {
    const info = await stat(file);
    if (info.isDirectory()) throw new Error('it is a directory');
    const stream = createReadStream(file);
    await new Promise<void>((resolve, reject) => {
      stream.once('open', () => resolve());
      stream.once('error', reject);
    });
    return { stream, name: file, size: info.size };
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

export class LineQueue {
  private readonly lines: Line[] = [];
  private readonly reader;
  private ended = false;
  private paused = false;
  private failure: unknown;
  private wake: (() => void) | undefined;
  private count = 0;
  /** Bytes read so far (for progress). */
  bytes = 0;

  constructor(
    input: Readable,
    private readonly highWater = 4096,
  ) {
    this.reader = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
    this.reader.on('line', (text: string) => {
      this.count += 1;
      this.bytes += Buffer.byteLength(text) + 1;
      this.lines.push({ number: this.count, text });
      if (!this.paused && this.lines.length >= this.highWater) {
        this.paused = true;
        this.reader.pause();
      }
      this.notify();
    });
    this.reader.on('close', () => {
      this.ended = true;
      this.notify();
    });
    input.on('error', (error) => {
      this.failure = error;
      this.ended = true;
      this.notify();
    });
  }

  /** Lines queued right now, without waiting. */
  get available(): number {
    return this.lines.length;
  }

  /** Up to `max` lines: those queued now, or, when none are, the next to arrive; [] at the end. */
  async take(max: number): Promise<Line[]> {
    while (this.lines.length === 0 && !this.ended) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
    if (this.failure !== undefined && this.lines.length === 0) throw this.failure;
    const taken = this.lines.splice(0, max);
    if (this.paused && this.lines.length < this.highWater / 2) {
      this.paused = false;
      // A closed reader has nothing more to give, and Node 22+ throws on resuming one.
      if (!this.ended) this.reader.resume();
    }
    return taken;
  }

  close(): void {
    this.reader.close();
  }

  private notify(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
