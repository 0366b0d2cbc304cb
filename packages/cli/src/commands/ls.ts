/** `rivulet ls`: the streams below a prefix, every page of them (protocol §6.1). */
import type { StreamListEntry } from '@rivulet/client';
import { table } from './format.js';
import { connectionUsage, remoteCommand } from './remote.js';

const usage = `Usage: rivulet ls [--prefix P]

Lists the streams of the caller's project at or below P (segment-wise: /a holds /a and /a/b, not
/ab), with their head offset and creation time. --json prints {"streams": [...]}.

Options:
  --prefix P       only streams at or below this path (default: all)

${connectionUsage}`;

export const lsCommand = remoteCommand(
  { name: 'ls', summary: 'list streams', usage, positionals: [], options: { prefix: { type: 'string' } } },
  async ({ values, io, client }) => {
    const streams: StreamListEntry[] = [];
    for await (const entry of client().listAll(values.prefix === undefined ? {} : { prefix: values.prefix })) streams.push(entry);
    if (values.json) io.out(JSON.stringify({ streams }));
    else if (streams.length === 0) io.err('no streams');
    else {
      const rows = streams.map((s) => [s.path, String(s.maxOffset), s.createdAt, s.streamId]);
      io.out(table(['PATH', 'HEAD', 'CREATED', 'STREAM ID'], rows));
    }
    return 0;
  },
);
