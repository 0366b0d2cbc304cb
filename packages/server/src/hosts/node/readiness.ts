/**
 * Whether the Node host can take writes (protocol §15.1 `/readyz`): it has started and is not
 * shutting down, its database is open and has not failed (a failed WAL sync stops it for good,
 * decision 010), and the disk under its data folder has room. A load
 * balancer or orchestrator takes a server out of rotation on 503 and puts it back on 200; the
 * reason says which check failed.
 */
import { statfsSync } from 'node:fs';

/** Below this many free bytes under the data folder a server calls itself not ready. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;

export type Readiness = { ready: true } | { ready: false; reason: string };

export interface ReadinessDeps {
  dataDir: string;
  /** Started and not shutting down. */
  running(): boolean;
  /** The database is open. */
  storageOpen(): boolean;
  /** Why the storage refuses all work (a failed sync of its log), or null while it works. */
  storageFailure?(): string | null;
  /** Free bytes available to this process under `dir` (default: statfs). */
  freeBytes?(dir: string): number;
}

function statfsFree(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

export function nodeReadiness(deps: ReadinessDeps): () => Readiness {
  const free = deps.freeBytes ?? statfsFree;
  return () => {
    if (!deps.running()) return { ready: false, reason: 'starting or shutting down' };
    if (!deps.storageOpen()) return { ready: false, reason: 'the database is not open' };
    const failure = deps.storageFailure?.() ?? null;
    if (failure !== null) return { ready: false, reason: failure };
    let bytes: number;
    try {
      bytes = free(deps.dataDir);
    } catch (error) {
      return { ready: false, reason: `cannot read the free space of ${deps.dataDir}: ${error instanceof Error ? error.message : String(error)}` };
    }
    if (bytes < MIN_FREE_BYTES) {
      return { ready: false, reason: `the disk of ${deps.dataDir} is full or nearly (${Math.floor(bytes / 1024 / 1024)} MiB free, ${MIN_FREE_BYTES / 1024 / 1024} MiB needed)` };
    }
    return { ready: true };
  };
}
