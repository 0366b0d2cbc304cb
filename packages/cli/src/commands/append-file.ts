/**
 * `rivulet append PATH --file F|-`: a JSON array (one atomic batch, protocol §4.1), one event, or
 * NDJSON — one event per line, appended in order and in batches (ndjson/batches.ts), stopping at
 * the first refused line with its number. Lines may be append inputs or committed events from
 * `tail --json` / `read --all --json` (ndjson/events.ts `appendInput`).
 */
import type { AppendEvent, CommittedEvent, RivuletClient } from '@rivulet/client';
import { UsageError } from '../command.js';
import { Batcher } from '../ndjson/batches.js';
import { appendInput, exportedEvents, LineError, parseLine } from '../ndjson/events.js';
import { LineQueue, openInput, type Line } from '../ndjson/lines.js';
import { lineWriter } from '../ndjson/output.js';
import { pumpLines } from '../ndjson/pump.js';
import { eventLines } from './format.js';
import type { RemoteIO } from './remote.js';

type Shape = { kind: 'document'; text: string } | { kind: 'lines'; first: Line[] };

/**
 * Looks at the first line that is not blank: "[" starts a JSON document (an array), as does a
 * "{" line that is not JSON on its own (a pretty-printed event); anything else is NDJSON.
 */
async function shapeOf(queue: LineQueue): Promise<Shape | undefined> {
  const seen: Line[] = [];
  for (;;) {
    const lines = await queue.take(1);
    const line = lines[0];
    if (!line) return undefined;
    seen.push(line);
    const text = line.text.trim();
    if (text === '') continue;
    let lineIsJson = true;
    try {
      JSON.parse(text);
    } catch {
      lineIsJson = false;
    }
    if (text.startsWith('[') || (text.startsWith('{') && !lineIsJson)) {
      const rest: string[] = [];
      for (let more = await queue.take(4096); more.length > 0; more = await queue.take(4096)) rest.push(...more.map((l) => l.text));
      return { kind: 'document', text: [...seen.map((l) => l.text), ...rest].join('\n') };
    }
    return { kind: 'lines', first: seen };
  }
}

function documentEvents(text: string, name: string): AppendEvent | AppendEvent[] {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${name} is not valid JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (Array.isArray(value) ? !value.every(isObject) : !isObject(value)) {
    throw new UsageError('--file must hold one event object or an array of event objects');
  }
  return value as AppendEvent | AppendEvent[];
}

export async function appendFile(client: RivuletClient, path: string, file: string, json: boolean, io: RemoteIO): Promise<number> {
  const input = await openInput(file, io);
  const queue = new LineQueue(input.stream);
  try {
    const shape = await shapeOf(queue);
    if (!shape) throw new UsageError(`${input.name} holds no events`);
    if (shape.kind === 'document') {
      const committed = await client.append(path, documentEvents(shape.text, input.name));
      if (json) io.out(JSON.stringify({ events: committed }));
      else io.out(eventLines(committed).join('\n'));
      return 0;
    }
    return await appendLines(client, path, queue, shape.first, json, io);
  } finally {
    queue.close();
  }
}

async function appendLines(client: RivuletClient, path: string, queue: LineQueue, first: Line[], json: boolean, io: RemoteIO): Promise<number> {
  const out = lineWriter(io);
  let appended = 0;
  let skipped = 0;
  const print = async (events: readonly CommittedEvent[]) => {
    appended += events.length;
    await out.write(json ? events.map((e) => JSON.stringify(e)) : eventLines(events));
  };
  const batcher = new Batcher(client, { committed: (_path, _items, events) => print(events) });
  const toItems = (line: Line) =>
    exportedEvents(parseLine(line.text, line.number), line.number).flatMap((value) => {
      const event = appendInput(value);
      if (event === null) skipped += 1;
      return event === null ? [] : [{ line: line.number, path, event }];
    });
  try {
    await pumpLines(queue, toItems, batcher, undefined, first);
  } catch (error) {
    if (!(error instanceof LineError)) throw error;
    io.err(`rivulet append: line ${error.line}: ${error.code ? `${error.code} ` : ''}${error.message}`);
    io.err(`rivulet append: ${appended} event(s) before line ${error.line} were appended, nothing after it`);
    return 1;
  } finally {
    out.dispose();
  }
  if (skipped > 0) io.err(`rivulet append: skipped ${skipped} committed control event(s) of events.iterate.com/stream/ (see rivulet import --include-control)`);
  return 0;
}
