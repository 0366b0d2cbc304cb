/**
 * Online backups of a running Node host (`POST /v1/admin/backup`, protocol §15.5): a consistent
 * snapshot of the data folder's database while appends and deliveries go on.
 *
 * The snapshot is SQLite's online backup API through the server's own connection
 * (`SqliteStorage.backup`): it copies a bounded number of pages per event-loop turn, so no append
 * waits for more than one step; pages the connection changes meanwhile are copied again, so the
 * finished copy is the database as of the last step, which holds every event acknowledged before
 * the backup began. It goes to a temporary file in the data folder (the same file system, whose free space
 * `/readyz` watches); once complete, the file is opened and removed from the folder at once, so the
 * answer streams from the open descriptor and nothing is left behind however the download ends. A
 * crash while the snapshot is being written leaves a `*.backup-tmp` file, which the next start
 * removes (`removeBackupLeftovers`). One backup runs at a time.
 */
import { createReadStream, fstatSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { RivuletError } from '@rivulet/contract';
import Database from 'better-sqlite3';
import type { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { DATABASE_FILE } from './data-lock.js';

/** What a finished snapshot answers: its size, the format it holds, and its bytes once. */
export interface BackupStream {
  bytes: number;
  format: number;
  body: ReadableStream<Uint8Array>;
}

export interface BackupOptions {
  /** Pages copied per event-loop turn (default 256: 1 MiB of 4 KiB pages). */
  pagesPerStep?: number;
}

const TEMP_SUFFIX = '.backup-tmp';

/** Deletes snapshots a crashed server left half-written in the data folder. */
export function removeBackupLeftovers(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (name.startsWith(`${DATABASE_FILE}.`) && name.endsWith(TEMP_SUFFIX)) rmSync(join(dataDir, name), { force: true });
  }
}

export class Backups {
  private running = false;
  private serial = 0;

  constructor(
    private readonly storage: SqliteStorage,
    private readonly dataDir: string,
    private readonly format: number,
    private readonly options: BackupOptions = {},
  ) {}

  /** Makes a snapshot and answers it as a stream; CONFLICT while another one runs. */
  async snapshot(): Promise<BackupStream> {
    if (this.running) throw new RivuletError('CONFLICT', 'a backup is already running on this server; wait for it to finish');
    this.running = true;
    const file = join(this.dataDir, `${DATABASE_FILE}.${process.pid}-${++this.serial}${TEMP_SUFFIX}`);
    try {
      const pages = this.options.pagesPerStep ?? 256;
      await this.storage.backup(file, pages);
      // The copy is in WAL mode, like its source; a backup file is one file: rollback journal.
      const copy = new Database(file);
      try {
        copy.pragma('journal_mode = DELETE');
      } finally {
        copy.close();
      }
      const fd = openSync(file, 'r');
      // Gone from the folder; the descriptor keeps the bytes until the answer is sent or dropped.
      rmSync(file, { force: true });
      const bytes = fstatSync(fd).size;
      const stream = createReadStream('', { fd, autoClose: true });
      stream.once('error', () => undefined);
      return { bytes, format: this.format, body: Readable.toWeb(stream) as ReadableStream<Uint8Array> };
    } catch (error) {
      rmSync(file, { force: true });
      throw new RivuletError('UNAVAILABLE', `the backup failed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      this.running = false;
    }
  }
}

