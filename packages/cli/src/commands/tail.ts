/**
 * `rivulet tail`: durable replay, then live events, until Ctrl-C or until the stream is destroyed
 * (protocol §5.2). The SDK reconnects after a dropped connection without repeating or
 * skipping an event; this command only says so on stderr. --json prints one event per line.
 */
import { intOption, parse, type Command } from '../command.js';
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
                   (with --json: one event per line, NDJSON)`;

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
        const events = client.tail(path, {
          afterOffset,
          ...(eventTypes ? { eventTypes } : {}),
          signal: stop.signal,
          onReconnect: ({ error, delayMs, attempt }) =>
            io.err(
              `rivulet tail: ${error ? `connection lost (${error.code} ${error.message})` : 'the server ended the stream (restarting?)'}; reconnecting in ${delayMs} ms (attempt ${attempt})`,
            ),
          onDestroyed: () => io.err(`rivulet tail: stream ${path} was destroyed`),
        });
        for await (const event of events) io.out(values.json ? JSON.stringify(event) : eventLine(event, 6));
        return 0;
      });
    } finally {
      stop.dispose();
    }
  },
};
