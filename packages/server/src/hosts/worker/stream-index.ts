/**
 * The stream listing of one project in the Worker host (`GET /v1/streams`): a table of the
 * project's live streams — path, lifetime, creation time — kept in the project's index Durable
 * Object. Stream objects announce a lifetime after the call that created it and withdraw it on
 * destroy (worker-stream-host.ts); the listing asks every listed stream's object for its head.
 *
 * Limits (docs/cloudflare.md §4.5): one object per project serialises the announcements of all its streams'
 * creations and destroys (a project creating streams faster than one object absorbs writes is
 * throttled there); an announcement lost to a crash is repeated on the stream's next call, so a
 * stream can be missing from the listing until it is touched again; a listing page costs one call
 * per listed stream.
 */
import { isPathUnder } from '@rivulet/contract';
import type { SqlStorage } from '../../ports/storage.js';
import type { ListOptions } from '../../engine/service.js';
import type { IndexEntry } from './api.js';

export class StreamIndex {
  constructor(private readonly storage: SqlStorage) {
    storage.run(`CREATE TABLE IF NOT EXISTS listed (path TEXT PRIMARY KEY, stream_id TEXT NOT NULL, created_at TEXT NOT NULL)`);
  }

  put(entry: IndexEntry): void {
    this.storage.run(`INSERT OR REPLACE INTO listed (path, stream_id, created_at) VALUES (?, ?, ?)`, entry.path, entry.streamId, entry.createdAt);
  }

  remove(path: string, streamId: string): void {
    this.storage.run(`DELETE FROM listed WHERE path = ? AND stream_id = ?`, path, streamId);
  }

  list(options: ListOptions): { entries: IndexEntry[]; more: boolean } {
    const limit = Math.min(options.limit, 10_000);
    const after = options.after ?? '';
    const rows =
      options.prefix === '/'
        ? this.storage.exec<{ path: string; stream_id: string; created_at: string }>(
            `SELECT path, stream_id, created_at FROM listed WHERE path > ? ORDER BY path LIMIT ?`,
            after,
            limit + 1,
          )
        : this.storage.exec<{ path: string; stream_id: string; created_at: string }>(
            // Everything strictly below "prefix/" sorts in ["prefix/", "prefix0"): "0" follows "/".
            `SELECT path, stream_id, created_at FROM listed WHERE (path = ? OR (path >= ? AND path < ?)) AND path > ? ORDER BY path LIMIT ?`,
            options.prefix,
            `${options.prefix}/`,
            `${options.prefix}0`,
            after,
            limit + 1,
          );
    const entries = rows
      .slice(0, limit)
      .filter((r) => isPathUnder(r.path, options.prefix))
      .map((r) => ({ path: r.path, streamId: r.stream_id, createdAt: r.created_at }));
    return { entries, more: rows.length > limit };
  }
}
