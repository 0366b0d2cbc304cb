/**
 * `rivulet append`: commit one event, or the events of a file: an array atomically, or NDJSON line
 * by line in batches (append-file.ts; protocol §3, §4).
 */
import type { AppendEvent } from '@rivulet/client';
import { parse, UsageError, type Command } from '../command.js';
import { appendFile } from './append-file.js';
import { eventLines } from './format.js';
import {
  clientFrom,
  connectionOptions,
  connectionUsage,
  jsonObjectOption,
  reportErrors,
  type RemoteIO,
} from './remote.js';

const usage = `Usage: rivulet append PATH TYPE [--payload JSON] [--metadata JSON] [--idempotency-key K] [--ephemeral]
       rivulet append PATH --file FILE|-

Appends one event to the stream at PATH (created by its first append), or every event of FILE
("-" reads standard input):
  - a JSON object is one event;
  - a JSON array is one batch, committed atomically (all or none);
  - NDJSON, one event per line, is appended in order and in batches; the first line the server
    refuses stops the command (exit 1) naming its line number: the lines before it are appended,
    none after it. Lines may be events as appended, or committed events as "rivulet tail --json"
    and "rivulet read --all --json" print them (their type, payload, metadata and idempotency key
    are appended again; their control events, events.iterate.com/stream/*, are skipped).
Prints the committed events (with --json: one document, or for NDJSON one event per line).

Options:
  --payload JSON           the event payload, a JSON object
  --metadata JSON          the event metadata, a JSON object
  --idempotency-key K      a repeat with the same key and body answers the stored event
  --ephemeral              deliver live, do not keep in the durable log
  --file FILE|-            events as JSON (instead of TYPE and the options above)

${connectionUsage}

Examples:
  rivulet append /shop/orders order-created --payload '{"id":7}'
  echo '[{"type":"a"},{"type":"b"}]' | rivulet append /shop/orders --file -
  rivulet append /shop/orders --file orders.ndjson
  rivulet tail /shop/orders --json | rivulet append /shop/orders-mirror --file -`;

export const appendCommand: Command = {
  name: 'append',
  summary: 'append an event (or a batch from a file) to a stream',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, {
      ...connectionOptions,
      payload: { type: 'string' },
      metadata: { type: 'string' },
      'idempotency-key': { type: 'string' },
      ephemeral: { type: 'boolean' },
      file: { type: 'string' },
    });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    let events: AppendEvent | AppendEvent[] | undefined;
    const [path, type, extra] = positionals;
    if (path === undefined) throw new UsageError('missing PATH');
    if (values.file !== undefined) {
      if (type !== undefined) throw new UsageError('give either TYPE or --file, not both');
      const single = ['payload', 'metadata', 'idempotency-key', 'ephemeral'] as const;
      const clash = single.find((flag) => values[flag] !== undefined);
      if (clash) throw new UsageError(`--${clash} does not combine with --file (put it in the file)`);
    } else {
      if (type === undefined) throw new UsageError('missing TYPE (or --file)');
      if (extra !== undefined) throw new UsageError(`unexpected argument "${extra}"`);
      const payload = jsonObjectOption('--payload', values.payload);
      const metadata = jsonObjectOption('--metadata', values.metadata);
      const event: AppendEvent = { type };
      if (payload) event.payload = payload;
      if (metadata) event.metadata = metadata;
      if (values['idempotency-key'] !== undefined) event.idempotencyKey = values['idempotency-key'];
      if (values.ephemeral) event.ephemeral = true;
      events = event;
    }
    const client = clientFrom(values, io.env);
    return reportErrors('append', io, async () => {
      if (events === undefined) return appendFile(client, path, values.file!, values.json === true, io);
      const committed = await client.append(path, events);
      if (values.json) io.out(JSON.stringify({ events: committed }));
      else io.out(eventLines(committed).join('\n'));
      return 0;
    });
  },
};
