/**
 * `rivulet import --file F|-`: appends exported events (NDJSON of `rivulet export`,
 * `read --all --json`, `tail --json`, or `read --json` documents) into the server, idempotently:
 * each event's idempotency key is derived from its source lifetime and offset, so importing the
 * same file again appends nothing (docs/operations.md, "Export and import"; protocol §4.2).
 * Lines are read in constant memory and appended in order, in batches (ndjson/batches.ts),
 * stopping at the first refused line with its number.
 */
import type { CommittedEvent } from '@rivulet/client';
import { canonicalizePath, isCoreNamespace, isPathUnder, RivuletError } from '@rivulet/contract';
import { parse, UsageError, type Command } from '../command.js';
import { Batcher, type Item } from '../ndjson/batches.js';
import { exportedEvents, importInput, isExported, LineError, parseLine, replayableControl, type ExportedEvent } from '../ndjson/events.js';
import { LineQueue, openInput, type Line } from '../ndjson/lines.js';
import { pumpLines } from '../ndjson/pump.js';
import { startProgress } from '../progress.js';
import { clientFrom, connectionOptions, connectionUsage, expectPositionals, reportErrors, type RemoteIO } from './remote.js';

const usage = `Usage: rivulet import --file FILE|- [--to PATH | --prefix-map OLD=NEW ...] [--include-control]

Appends the events of FILE ("-": standard input), NDJSON as rivulet export, read --all --json
and tail --json write it (a read --json document is taken too), in order and in batches. Each
event keeps its type, payload and metadata; metadata.importedFrom gains one hop naming where it
was read (path, streamId, offset, createdAt, and its idempotencyKey if it had one). Its
idempotency key is "import:" + its source streamId (or path) + ":" + its offset, so importing the
same file again appends nothing. The first line the server refuses, or that is not an exported
event, stops the import (exit 1) naming its line number: the lines before it are imported, none
after it, and running the same import again goes on from there. Prints what it did:
"imported N event(s) into S stream(s), M already there; skipped …" (with --json:
{"appended", "alreadyPresent", "streams", "skipped": {"control", "ephemeral"}}). A progress bar
(bytes of FILE, or lines of standard input) is drawn on standard error when it is a terminal.

Control events (events.iterate.com/stream/*) are skipped: replaying a subscription onto another
server would start its deliveries there. --include-control replays those a caller may append
(subscription-configured, -removed, -cursor-set, -delivery-resumed, paused, resumed,
error-occurred) unchanged, but never created, delivery-halted or connection facts, nor control
events that were copies. Ephemeral events are skipped.

Options:
  --file FILE|-          the NDJSON to import
  --to PATH              append every event to PATH (the input must come from one stream)
  --prefix-map OLD=NEW   import streams at or below OLD below NEW instead (repeatable; the
                         longest OLD that matches wins; other streams keep their path)
  --include-control      replay control events a caller may append (see above)

${connectionUsage}

Examples:
  rivulet export --prefix /shop > shop.ndjson && rivulet import --file shop.ndjson --url http://new:7420
  rivulet export /shop/orders | rivulet import --file - --to /archive/orders
  rivulet import --file shop.ndjson --prefix-map /shop=/restored/shop`;

interface Mapping {
  to?: string;
  prefixes: { from: string; to: string }[];
}

function pathOption(name: string, value: string): string {
  try {
    return canonicalizePath(value);
  } catch (error) {
    if (error instanceof RivuletError) throw new UsageError(`${name}: ${error.message}`);
    throw error;
  }
}

function mappingOf(to: string | undefined, maps: readonly string[]): Mapping {
  if (to !== undefined && maps.length > 0) throw new UsageError('give either --to or --prefix-map, not both');
  const prefixes = maps.map((map) => {
    const at = map.indexOf('=');
    if (at <= 0 || at === map.length - 1) throw new UsageError(`--prefix-map takes OLD=NEW, got "${map}"`);
    return { from: pathOption('--prefix-map', map.slice(0, at)), to: pathOption('--prefix-map', map.slice(at + 1)) };
  });
  prefixes.sort((a, b) => b.from.length - a.from.length);
  return to === undefined ? { prefixes } : { to: pathOption('--to', to), prefixes };
}

/** Where an event of source path `path` goes. */
function destinationOf(mapping: Mapping, path: string): string {
  if (mapping.to !== undefined) return mapping.to;
  const map = mapping.prefixes.find((m) => isPathUnder(path, m.from));
  if (!map) return path;
  const rest = map.from === '/' ? path : path.slice(map.from.length);
  if (rest === '' || rest === '/') return map.to;
  return map.to === '/' ? rest : `${map.to}${rest}`;
}

export interface ImportTally {
  appended: number;
  alreadyPresent: number;
  streams: number;
  skipped: { control: number; ephemeral: number };
}

export const importCommand: Command = {
  name: 'import',
  summary: 'append exported NDJSON events, idempotently',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, {
      ...connectionOptions,
      file: { type: 'string' },
      to: { type: 'string' },
      'prefix-map': { type: 'string', multiple: true },
      'include-control': { type: 'boolean' },
    });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    expectPositionals(positionals, []);
    if (values.file === undefined) throw new UsageError('missing --file FILE (or --file - for standard input)');
    const mapping = mappingOf(values.to, values['prefix-map'] ?? []);
    const client = clientFrom(values, io.env);
    const input = await openInput(values.file, io);
    const queue = new LineQueue(input.stream);
    const bySize = input.size !== undefined;
    const progress = startProgress('import', {
      unit: bySize ? 'bytes' : 'lines',
      quiet: values.json === true,
      ...(bySize ? { total: input.size } : {}),
      ...(io.progress ? { stream: io.progress } : {}),
    });
    const tally: ImportTally = { appended: 0, alreadyPresent: 0, streams: 0, skipped: { control: 0, ephemeral: 0 } };
    // The head of each destination before the import touched it, then the highest offset this
    // import was answered: an answered offset above it is new, one at or below it was there.
    const heads = new Map<string, number>();
    let source: string | undefined;
    const batcher = new Batcher(client, {
      prepare: async (path) => {
        heads.set(path, (await client.getEvents(path, { limit: 1 })).streamMaxOffset);
        tally.streams += 1;
      },
      committed: (path, items, events) => count(tally, heads, path, items, events),
    });
    const toItems = (line: Line): Item[] =>
      exportedEvents(parseLine(line.text, line.number), line.number).flatMap((value) => {
        if (!isExported(value)) {
          throw new LineError(line.number, 'not an exported event: it needs path, offset and type (a line of rivulet export, read --all --json or tail --json)');
        }
        const event = value as unknown as ExportedEvent;
        if (event.ephemeral) {
          tally.skipped.ephemeral += 1;
          return [];
        }
        if (isCoreNamespace(event.type) && !(values['include-control'] && replayableControl(event))) {
          tally.skipped.control += 1;
          return [];
        }
        if (mapping.to !== undefined && source !== undefined && event.path !== source) {
          throw new LineError(line.number, `--to takes the events of one stream: this line is from ${event.path}, the lines before from ${source} (use --prefix-map)`);
        }
        source ??= event.path;
        return [{ line: line.number, path: destinationOf(mapping, event.path), event: importInput(event, line.number) }];
      });
    let read = 0;
    const onLines = (lines: number) => {
      progress.advance(bySize ? queue.bytes - read : lines);
      read = queue.bytes;
    };
    try {
      return await reportErrors('import', io, async () => {
        try {
          await pumpLines(queue, toItems, batcher, onLines);
        } catch (error) {
          if (!(error instanceof LineError)) throw error;
          progress.stop();
          io.err(`rivulet import: line ${error.line}: ${error.code ? `${error.code} ` : ''}${error.message}`);
          io.err(
            `rivulet import: ${tally.appended} event(s) before line ${error.line} were imported (${tally.alreadyPresent} already there), nothing after it; importing again appends nothing twice`,
          );
          return 1;
        }
        progress.stop();
        if (values.json) io.out(JSON.stringify(tally));
        else io.out(summary(tally));
        return 0;
      });
    } finally {
      progress.stop();
      queue.close();
    }
  },
};

function count(tally: ImportTally, heads: Map<string, number>, path: string, items: readonly Item[], events: readonly CommittedEvent[]): void {
  const head = heads.get(path) ?? 0;
  const fresh = new Set(events.filter((e) => e.offset > head).map((e) => e.offset));
  tally.appended += fresh.size;
  tally.alreadyPresent += items.length - fresh.size;
  heads.set(path, Math.max(head, ...events.map((e) => e.offset)));
}

function summary(tally: ImportTally): string {
  const { appended, alreadyPresent, streams, skipped } = tally;
  return `imported ${appended} event(s) into ${streams} stream(s), ${alreadyPresent} already there; skipped ${skipped.control} control and ${skipped.ephemeral} ephemeral event(s)`;
}
