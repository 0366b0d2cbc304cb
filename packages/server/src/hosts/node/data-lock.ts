/**
 * One server per data folder: the engine keeps per-stream state in memory, so a second process on
 * the same files would answer from stale caches. A lock file holds the owner's pid; a lock left by a
 * process that no longer runs (kill -9) is taken over.
 */
import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** The database of a data folder (beside its lock and its webhook secret). */
export const DATABASE_FILE = 'rivulet.db';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function lockDataFolder(dir: string): () => void {
  const file = join(dir, 'LOCK');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) unlinkSync(file);
        } catch {
          // Already gone.
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid)) {
        throw new Error(`another Rivulet server (pid ${pid}) is using the data folder ${dir}`);
      }
      unlinkSync(file);
    }
  }
  throw new Error(`could not lock the data folder ${dir}`);
}
