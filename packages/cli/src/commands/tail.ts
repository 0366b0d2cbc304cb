/**
 * `rivulet tail`: durable replay, then live events, until Ctrl-C or until the stream is destroyed
 * (protocol §5.2). The SDK reconnects after a dropped connection without repeating or
 * skipping an event; this command only says so on stderr. --json prints one event per line with
 * the lifetime it belongs to (docs/operations.md, "Export and import").
 */
import { intOption, parse, type Command } from '../command.js';
import { exportLine } from '../ndjson/events.js';
import { eventLine } from './format.js';
import {
  clientFrom,
  connectionOptions,
  connectionUsage,
  expectPositionals,
  reportErrors,
  stopSignal,
  typesOption,
  type RemoteIO,
} from './remote.js';

const usage = `Usage: rivulet tail PATH [--after N] [--types a,b]

Prints the events of the stream at PATH from offset N on, then every new event as it is committed,
until Ctrl-C or until the stream is destroyed. Reconnects by itself after a dropped connection.

Options:
  --after N        start after offset N (default 0: from the first event)
  --types a,b      only these event types

${connectionUsage}
                   (with --json: one event per line with its streamId, NDJSON as
                   rivulet export writes it, which rivulet import and append --file - read)

Examples:
  rivulet tail /shop/orders --after 100
  rivulet tail /shop/orders --json | rivulet import --file - --to /shop/orders-copy`;

export const tailCommand: Command = {
  name: 'tail',
  summary: 'follow a stream live (replay, then new events)',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, {
      ...connectionOptions,
      after: { type: 'string' },
      types: { type: 'string' },
    });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    const [path] = expectPositionals(positionals, ['PATH']) as [string];
    const afterOffset = intOption('--after', values.after, 0);
    const eventTypes = typesOption(values.types);
    const client = clientFrom(values, io.env);
    const stop = stopSignal(io);
    try {
      return await reportErrors('tail', io, async () => {
        let streamId: string | undefined;
        const events = client.tail(path, {
          afterOffset,
          ...(eventTypes ? { eventTypes } : {}),
          signal: stop.signal,
          onReconnect: ({ error, delayMs, attempt }) =>
            io.err(
              `rivulet tail: ${error ? `connection lost (${error.code} ${error.message})` : 'the server ended the stream (restarting?)'}; reconnecting in ${delayMs} ms (attempt ${attempt})`,
            ),
          onDestroyed: () => io.err(`rivulet tail: stream ${path} was destroyed`),
          onStreamId: (id) => {
            streamId = id;
          },
        });
        for await (const event of events) io.out(values.json ? exportLine(event, streamId) : eventLine(event, 6));
        return 0;
      });
    } finally {
      stop.dispose();
    }
  },
};
