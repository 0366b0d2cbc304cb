/**
 * `rivulet read`: one page of committed events, with --all every page up to the head, or with
 * --last N the last N (protocol §5.1; the SDK's latest). Human output streams page by page; --json prints one
 * document shaped like the HTTP answer, and --all --json one event per line (NDJSON, in constant memory).
 */
import { LATEST_MAX, type ReadOptions, type ReadResponse, type RivuletClient } from '@rivulet/client';
import { intOption, parse, UsageError, type Command } from '../command.js';
import { exportLine } from '../ndjson/events.js';
import { lineWriter, OutputClosed } from '../ndjson/output.js';
import { eventLines } from './format.js';
import {
  clientFrom,
  connectionOptions,
  connectionUsage,
  expectPositionals,
  reportErrors,
  typesOption,
  type RemoteIO,
} from './remote.js';

const usage = `Usage: rivulet read PATH [--after N] [--before N] [--limit N] [--types a,b] [--ephemeral] [--all]
       rivulet read PATH --last N [--before N] [--types a,b] [--ephemeral]

Prints committed events of the stream at PATH as "offset  time  type  payload" lines. A stream that
does not exist reads as empty (and is not created).

Options:
  --after N        only events after offset N (default 0)
  --before N       only events before offset N
  --limit N        events per request, 1–500 (default 500)
  --types a,b      only these event types
  --ephemeral      include ephemeral events still retained
  --all            read page after page up to the head instead of one page; with --json,
                   one event per line with its streamId (NDJSON, as rivulet export writes)
  --last N         the last N matching events (1–${LATEST_MAX}), like tail -n; not with --after,
                   --limit or --all

${connectionUsage}

Examples:
  rivulet read /shop/orders --after 100 --limit 20
  rivulet read /shop/orders --all --json > orders.ndjson
  rivulet read /shop/orders --all --json | rivulet import --file - --to /shop/orders-copy`;

export const readCommand: Command = {
  name: 'read',
  summary: 'print the events of a stream',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, {
      ...connectionOptions,
      after: { type: 'string' },
      before: { type: 'string' },
      limit: { type: 'string' },
      types: { type: 'string' },
      ephemeral: { type: 'boolean' },
      all: { type: 'boolean' },
      last: { type: 'string' },
    });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    const [path] = expectPositionals(positionals, ['PATH']) as [string];
    const options: ReadOptions = {
      afterOffset: intOption('--after', values.after, 0),
      beforeOffset: values.before === undefined ? undefined : intOption('--before', values.before, 0, 1),
      limit: values.limit === undefined ? undefined : intOption('--limit', values.limit, 0, 1),
      eventTypes: typesOption(values.types),
      includeEphemeral: values.ephemeral === true,
    };
    const last = values.last === undefined ? undefined : intOption('--last', values.last, 0, 1);
    if (last !== undefined) {
      if (last > LATEST_MAX) throw new UsageError(`--last must be at most ${LATEST_MAX}, got "${values.last}"`);
      const clash = (['after', 'limit', 'all'] as const).find((name) => values[name] !== undefined);
      if (clash) throw new UsageError(`--last reads back from the head: it does not go with --${clash}`);
    }
    const client = clientFrom(values, io.env);
    if (last !== undefined) {
      return reportErrors('read', io, async () => {
        const document = await client.latest(path, last, {
          beforeOffset: options.beforeOffset,
          eventTypes: options.eventTypes,
          includeEphemeral: options.includeEphemeral,
        });
        if (values.json) io.out(JSON.stringify(document));
        else if (document.events.length > 0) io.out(eventLines(document.events).join('\n'));
        else io.err(document.streamId === null ? `stream ${path} does not exist` : 'no events');
        return 0;
      });
    }
    if (values.all && values.json) return reportErrors('read', io, () => readAllJson(client, path, options, io));
    return reportErrors('read', io, async () => {
      const pages = values.all ? client.readPages(path, options) : [await client.getEvents(path, options)];
      let document: ReadResponse | undefined;
      let count = 0;
      for await (const page of pages) {
        count += page.events.length;
        if (!values.json && page.events.length > 0) io.out(eventLines(page.events).join('\n'));
        document ??= page;
        if (!values.all && !values.json) hintMore(io, path, page, options);
      }
      if (values.json) io.out(JSON.stringify(document));
      else if (count === 0) io.err(document?.streamId === null ? `stream ${path} does not exist` : 'no events');
      return 0;
    });
  },
};

/** --all --json: NDJSON, page by page with backpressure, each event with its lifetime (docs/operations.md). */
async function readAllJson(client: RivuletClient, path: string, options: ReadOptions, io: RemoteIO): Promise<number> {
  const out = lineWriter(io);
  try {
    for await (const page of client.readPages(path, options)) {
      await out.write(page.events.map((event) => exportLine(event, page.streamId)));
    }
    return 0;
  } catch (error) {
    if (error instanceof OutputClosed) return 0;
    throw error;
  } finally {
    out.dispose();
  }
}

/** Tells a person that one page was not the whole answer. */
function hintMore(io: RemoteIO, path: string, page: ReadResponse, options: ReadOptions): void {
  const last = page.events.at(-1);
  if (!last || page.events.length < (options.limit ?? 500)) return;
  const end = options.beforeOffset === undefined ? page.streamMaxOffset : Math.min(page.streamMaxOffset, options.beforeOffset - 1);
  if (last.offset >= end) return;
  io.err(`more events follow: rivulet read ${path} --after ${last.offset} (or --all)`);
}
