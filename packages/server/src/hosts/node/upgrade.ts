/**
 * What the Node host does before a storage-format upgrade (protocol §16.4): a full copy of the
 * database as it was, `rivulet.db.before-upgrade-vN` beside it, complete and synced before any
 * step runs, and one log line naming both formats and the copy. If the copy cannot be made the
 * upgrade does not start and the server does not open the folder.
 */
import { join } from 'node:path';
import { RivuletError } from '@rivulet/contract';
import type { Logger } from '../../ports/logger.js';
import type { SqliteStorage } from '../../adapters/sqlite/sqlite-storage.js';
import { DATABASE_FILE } from './data-lock.js';
import { snapshotInto } from './snapshot-file.js';

/** The file a pre-upgrade copy of format `from` goes to. */
export function upgradeBackupFile(dataDir: string, from: number): string {
  return join(dataDir, `${DATABASE_FILE}.before-upgrade-v${from}`);
}

/** The `beforeUpgrade` of openSchema for a data folder's database. */
export function backupBeforeUpgrade(storage: SqliteStorage, dataDir: string, logger: Logger): (from: number, to: number) => void {
  return (from, to) => {
    const file = upgradeBackupFile(dataDir, from);
    try {
      snapshotInto(storage.db, file);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new RivuletError(
        'UNAVAILABLE',
        `cannot upgrade the data folder ${dataDir} from storage format ${from} to ${to}: the copy of the database could not be written to ${file} (${reason}). Nothing was changed.`,
      );
    }
    // The port has no informational level; a format upgrade is worth an operator's notice.
    logger.warn?.(`rivulet: upgrading the data folder ${dataDir} from storage format ${from} to ${to}; the database as it was is kept in ${file}`);
  };
}
