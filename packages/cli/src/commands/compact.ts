/**
 * `rivulet compact`: gives the space of destroyed streams back to the system (the server's
 * compactDataFolder): with no server running on the folder, finishes erasing destroyed streams and
 * rewrites the database file. Prints progress, then the sizes before and after (--json: one
 * document).
 */
import { Defaults } from '@rivulet/contract';
import { resolve } from 'node:path';
import { parse, UsageError, type Command } from '../command.js';
import { reportErrors } from './remote.js';

const usage = `Usage: rivulet compact [--data DIR] [--json]

Gives the disk space of destroyed streams back to the system. SQLite reuses the pages a destroy
frees but never shrinks its file; this finishes erasing destroyed streams and rewrites the
database file without the free pages. Stop the server on DIR first (compact refuses a folder in
use). While it runs it needs free disk space of about the database's size.

Options:
  --data DIR       data folder (RIVULET_DATA, default ${Defaults.data})
  --json           print {"bytesBefore", "bytesAfter", "purgedRows"} instead of sentences
  -h, --help       show this help`;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export const compactCommand: Command = {
  name: 'compact',
  summary: 'give the space of destroyed streams back (server stopped)',
  usage,
  async run(argv, io) {
    const { values, positionals } = parse(argv, { data: { type: 'string' }, json: { type: 'boolean' } }, false);
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    const dir = resolve(values.data ?? io.env.RIVULET_DATA ?? Defaults.data);
    const { compactDataFolder } = await import('@rivulet/server/node');
    return reportErrors('compact', io, async () => {
      const report = compactDataFolder(dir, values.json ? {} : { progress: (line: string) => io.err(`${line}…`) });
      if (values.json) io.out(JSON.stringify(report));
      else {
        const erased = report.purgedRows > 0 ? `; erased ${report.purgedRows} event(s) of destroyed streams` : '';
        io.out(`compacted ${dir}: ${mb(report.bytesBefore)} → ${mb(report.bytesAfter)}${erased}`);
      }
      return 0;
    });
  },
};
