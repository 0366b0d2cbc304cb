/**
 * `rivulet backup --to FILE`: downloads an online backup from a running server (protocol §15.5)
 * into FILE.partial, with a progress bar on a terminal, checks the whole file (SQLite's integrity
 * check and the storage format, the server's checkBackupFile) and only then renames it to FILE. A
 * failed or interrupted backup leaves no FILE and no FILE.partial.
 */
import { createWriteStream, existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { RivuletError } from '@rivulet/client';
import { parse, UsageError, type Command } from '../command.js';
import { startProgress } from '../progress.js';
import { clientFrom, connectionOptions, connectionUsage, reportErrors, stopSignal, type RemoteIO } from './remote.js';

const usage = `Usage: rivulet backup --to FILE [--force]

Writes a consistent snapshot of the server's whole database to FILE while the server keeps
serving appends and deliveries. Needs an admin token when the server has tokens. The download goes
to FILE.partial and becomes FILE only after SQLite's integrity check passed on it. Restore it with
"rivulet restore --from FILE --data DIR". On a terminal a progress bar is drawn on standard error.

Options:
  --to FILE        where the backup goes (required)
  --force          replace FILE if it exists

${connectionUsage}`;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

export const backupCommand: Command = {
  name: 'backup',
  summary: 'write an online backup of a running server to a file',
  usage,
  async run(argv, io: RemoteIO) {
    const { values, positionals } = parse(argv, { ...connectionOptions, to: { type: 'string' }, force: { type: 'boolean' } }, false);
    if (values.help) {
      io.out(usage);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    if (values.to === undefined || values.to === '') throw new UsageError('--to FILE is required');
    const file = resolve(values.to);
    const partial = `${file}.partial`;
    const client = clientFrom(values, io.env);
    const { checkBackupFile } = await import('@rivulet/server/node');
    const stop = stopSignal(io);
    const started = performance.now();
    return reportErrors('backup', io, async () => {
      if (existsSync(file) && !values.force) throw new RivuletError('CONFLICT', `${file} already exists; pass --force to replace it`);
      const progress = startProgress('backup', { unit: 'bytes', quiet: values.json === true });
      try {
        const download = await client.backup({ signal: stop.signal });
        if (download.bytes !== null) progress.total(download.bytes);
        const count = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            progress.advance(chunk.length);
            done(null, chunk);
          },
        });
        try {
          await pipeline(Readable.fromWeb(download.body as NodeReadableStream), count, createWriteStream(partial, { flush: true }), {
            signal: stop.signal,
          });
        } catch (error) {
          if (stop.signal.aborted) throw new RivuletError('UNAVAILABLE', 'interrupted: no backup was written');
          throw new RivuletError('UNAVAILABLE', `the download broke off after ${progress.done} bytes: ${error instanceof Error ? error.message : String(error)}`);
        }
        if (download.bytes !== null && progress.done !== download.bytes) {
          throw new RivuletError('UNAVAILABLE', `the download broke off after ${progress.done} of ${download.bytes} bytes: no backup was written`);
        }
        progress.stop();
        const report = checkBackupFile(partial);
        renameSync(partial, file);
        const durationMs = Math.round(performance.now() - started);
        if (values.json) io.out(JSON.stringify({ file, bytes: report.bytes, format: report.format, durationMs }));
        else io.out(`backed up ${client.url} to ${file}: ${mb(report.bytes)}, storage format ${report.format}, in ${(durationMs / 1000).toFixed(1)} s`);
        return 0;
      } catch (error) {
        rmSync(partial, { force: true });
        // A file the check refused names the partial download, which is gone: name FILE instead.
        if (error instanceof RivuletError && error.message.startsWith(partial)) {
          throw new RivuletError(error.code, `the downloaded backup${error.message.slice(partial.length)}; no backup was written`);
        }
        throw error;
      } finally {
        progress.stop();
        stop.dispose();
      }
    });
  },
};
