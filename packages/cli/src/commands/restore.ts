/**
 * `rivulet restore --from FILE --data DIR`: makes DIR a data folder holding the backup FILE
 * (the server's restoreDataFolder, protocol §16.10), with no server running on DIR.
 */
import { Defaults } from '@rivulet/contract';
import { resolve } from 'node:path';
import { parse, UsageError, type Command } from '../command.js';
import { reportErrors } from './remote.js';

const usage = `Usage: rivulet restore --from FILE [--data DIR] [--force] [--json]

Makes DIR a data folder that "rivulet serve --data DIR" starts on, holding the backup FILE (made
by "rivulet backup"). FILE is checked first: a SQLite database that passes SQLite's integrity
check and records a storage format this server reads or upgrades. Stop the server on DIR first
(restore refuses a folder in use). A folder that already holds a database is refused unless
--force is given; the new database is written beside it and renamed into place.

Options:
  --from FILE      the backup to restore (required)
  --data DIR       data folder (RIVULET_DATA, default ${Defaults.data})
  --force          replace the database DIR already holds
  --json           print {"data", "bytes", "format"} instead of a sentence
  -h, --help       show this help`;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export const restoreCommand: Command = {
  name: 'restore',
  summary: 'make a data folder from a backup file (server stopped)',
  usage,
  async run(argv, io) {
    const { values, positionals } = parse(
      argv,
      { from: { type: 'string' }, data: { type: 'string' }, force: { type: 'boolean' }, json: { type: 'boolean' } },
      false,
    );
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    if (values.from === undefined || values.from === '') throw new UsageError('--from FILE is required');
    const dir = resolve(values.data ?? io.env.RIVULET_DATA ?? Defaults.data);
    const from = resolve(values.from);
    const { restoreDataFolder } = await import('@rivulet/server/node');
    return reportErrors('restore', io, async () => {
      const report = restoreDataFolder({ from, data: dir, force: values.force === true });
      if (values.json) io.out(JSON.stringify({ data: dir, bytes: report.bytes, format: report.format }));
      else io.out(`restored ${from} into ${dir} (${mb(report.bytes)}, storage format ${report.format}); start it with: rivulet serve --data ${dir}`);
      return 0;
    });
  },
};
