/**
 * `rivulet export`: the committed events of one stream, or of every stream below a prefix, as
 * NDJSON on standard output (docs/operations.md, "Export and import"). Pages are read one after
 * the other (protocol §5.1) and each is written before the next is asked for, with backpressure,
 * so memory stays flat however long the stream. Each line is the committed event with its
 * `streamId` (protocol §2.2): what `rivulet import` needs to know where the event came from.
 */
import type { RivuletClient } from '@rivulet/client';
import { intOption, parse, UsageError, type Command } from '../command.js';
import { exportLine } from '../ndjson/events.js';
import { lineWriter, OutputClosed, type LineWriter } from '../ndjson/output.js';
import { startProgress, type Progress } from '../progress.js';
import { clientFrom, connectionOptions, connectionUsage, reportErrors, type RemoteIO } from './remote.js';

const usage = `Usage: rivulet export [PATH | --prefix P] [--after N]

Writes the committed events of the stream at PATH, or of every stream at or below P (all
streams when neither is given), to standard output as NDJSON: one event per line, in offset
order, stream after stream in path order. Each line is the event as the server committed it
(path, offset, createdAt, type, payload, metadata, idempotencyKey, source) plus the streamId of
its lifetime, which rivulet import uses to recognise what it already imported. Ephemeral events
are not exported. Memory stays flat however long the streams; a progress bar is drawn on
standard error when it is a terminal.

Options:
  --prefix P       every stream at or below P (segment-wise: /a holds /a and /a/b, not /ab)
  --after N        only events after offset N (of every exported stream; default 0)

${connectionUsage}

Examples:
  rivulet export /shop/orders > orders.ndjson
  rivulet export --prefix /shop --after 1000 | gzip > shop.ndjson.gz
  rivulet export /shop/orders | rivulet import --file - --url http://other:7420`;

export const exportCommand: Command = {
  name: 'export',
  summary: 'write the events of streams as NDJSON (for import)',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, { ...connectionOptions, prefix: { type: 'string' }, after: { type: 'string' } });
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
    const [path] = positionals;
    if (path !== undefined && values.prefix !== undefined) throw new UsageError('give either PATH or --prefix, not both');
    const afterOffset = intOption('--after', values.after, 0);
    const client = clientFrom(values, io.env);
    const out = lineWriter(io);
    const progress = startProgress('export', { unit: 'events', ...(io.progress ? { stream: io.progress } : {}) });
    const tally = { events: 0, streams: 0 };
    try {
      return await reportErrors('export', io, async () => {
        if (path !== undefined) {
          await exportStream(client, path, afterOffset, out, progress, tally, true);
        } else {
          for await (const entry of client.listAll(values.prefix === undefined ? {} : { prefix: values.prefix })) {
            await exportStream(client, entry.path, afterOffset, out, progress, tally, false);
          }
        }
        progress.stop();
        io.err(`rivulet export: ${tally.events} event(s) from ${tally.streams} stream(s)`);
        return 0;
      });
    } catch (error) {
      if (error instanceof OutputClosed) return 0;
      throw error;
    } finally {
      progress.stop();
      out.dispose();
    }
  },
};

async function exportStream(
  client: RivuletClient,
  path: string,
  afterOffset: number,
  out: LineWriter,
  progress: Progress,
  tally: { events: number; streams: number },
  single: boolean,
): Promise<void> {
  let first = true;
  for await (const page of client.readPages(path, { afterOffset })) {
    if (first && page.streamId !== null) {
      tally.streams += 1;
      if (single) progress.total(Math.max(0, page.streamMaxOffset - afterOffset));
    }
    first = false;
    await out.write(page.events.map((event) => exportLine(event, page.streamId)));
    tally.events += page.events.length;
    progress.advance(page.events.length);
  }
}
