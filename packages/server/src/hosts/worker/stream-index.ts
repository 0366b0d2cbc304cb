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
 * per listed stream. The subscription listing works alike: the index holds each subscription's key
 * and whether it is halted, and a page asks each listed source's object for its entries. The index
 * also keeps the project's /metrics figures that its stream objects report (metrics-rollup.ts,
 * docs/cloudflare.md §4.2); its halted gauge is the count of subscriptions listed as halted.
 */
import { isPathUnder } from '@rivulet/contract';
import type { SqlStorage } from '../../ports/storage.js';
import type { ListOptions } from '../../engine/service.js';
import type { IndexEntry, SubscribedCandidate, SubscribedQuery } from './api.js';
import { IndexMetrics, type Appended, type MetricsReport, type ProjectMetrics } from './metrics-rollup.js';

export class StreamIndex {
  /** The project's /metrics figures, reported by its stream objects (metrics-rollup.ts). */
  readonly metrics: IndexMetrics;

  constructor(private readonly storage: SqlStorage) {
    storage.run(`CREATE TABLE IF NOT EXISTS listed (path TEXT PRIMARY KEY, stream_id TEXT NOT NULL, created_at TEXT NOT NULL)`);
    // The project's subscriptions, for GET /v1/subscriptions (protocol §21): key and halt per source
    // path, told by the source's object after each commit that changes them.
    storage.run(
      `CREATE TABLE IF NOT EXISTS subscribed (path TEXT NOT NULL, key TEXT NOT NULL, stream_id TEXT NOT NULL, halted INTEGER NOT NULL, PRIMARY KEY (path, key))`,
    );
    this.metrics = new IndexMetrics(storage);
  }

  /** Applies one stream object's report (metrics-rollup.ts); answers whether it was new. */
  reportMetrics(report: MetricsReport): boolean {
    return this.metrics.apply(report);
  }

  /** The project's figures for /metrics; the halted gauge counts the subscriptions listed as halted. */
  metricsTotals(): ProjectMetrics {
    const halted = this.storage.exec<{ n: number }>(`SELECT count(*) AS n FROM subscribed WHERE halted = 1`)[0]!.n;
    return this.metrics.totals(halted);
  }

  /** Replaces what the index holds of `path`'s subscriptions (none: the stream has none). */
  putSubscriptions(path: string, streamId: string, entries: ReadonlyArray<{ key: string; halted: boolean }>): void {
    this.storage.transaction(() => {
      this.storage.run(`DELETE FROM subscribed WHERE path = ?`, path);
      for (const e of entries) this.storage.run(`INSERT INTO subscribed (path, key, stream_id, halted) VALUES (?, ?, ?, ?)`, path, e.key, streamId, e.halted ? 1 : 0);
    });
  }

  /** Subscriptions in the listing's order (halted first, then path and key), after `q.after`. */
  subscribed(q: SubscribedQuery): SubscribedCandidate[] {
    const params: (string | number)[] = [];
    let where = '1 = 1';
    if (q.prefix !== '/') {
      where += ` AND (path = ? OR (path >= ? AND path < ?))`;
      params.push(q.prefix, `${q.prefix}/`, `${q.prefix}0`);
    }
    if (q.halted !== undefined) where += q.halted ? ` AND halted = 1` : ` AND halted = 0`;
    if (q.after) {
      where += ` AND (1 - halted, path, key) > (?, ?, ?)`;
      params.push(q.after.group, q.after.path, q.after.key);
    }
    return this.storage
      .exec<{ path: string; key: string; halted: number }>(`SELECT path, key, halted FROM subscribed WHERE ${where} ORDER BY 1 - halted, path, key LIMIT ?`, ...params, q.limit)
      .map((r) => ({ group: r.halted === 1 ? 0 : 1, path: r.path, key: r.key }));
  }

  put(entry: IndexEntry): void {
    this.storage.run(`INSERT OR REPLACE INTO listed (path, stream_id, created_at) VALUES (?, ?, ?)`, entry.path, entry.streamId, entry.createdAt);
  }

  /** A destroyed lifetime; `appended` are its final appended figures, when its object knew them. */
  remove(path: string, streamId: string, appended?: Appended): void {
    this.storage.run(`DELETE FROM listed WHERE path = ? AND stream_id = ?`, path, streamId);
    this.storage.run(`DELETE FROM subscribed WHERE path = ? AND stream_id = ?`, path, streamId);
    this.metrics.forget(streamId, appended);
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
