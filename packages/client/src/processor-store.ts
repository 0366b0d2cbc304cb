/**
 * The processor host's SQLite file (`@rivulet/client/processor-host`, Node only): one row
 * `{streamId, checkpoint, state}` per (project, stream path, subscription key, processor slug),
 * written by one statement so that state and checkpoint are committed together or not at all.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/** One processor's stored checkpoint and state for one subscription of one stream. */
export interface ProcessorRecord<S = unknown> {
  projectId: string | null;
  path: string;
  subscriptionKey: string;
  slug: string;
  /** The source lifetime the checkpoint belongs to. */
  streamId: string;
  /** The last folded source offset (0: nothing yet). */
  checkpoint: number;
  state: S;
  updatedAt: string;
}

interface Row {
  stream_id: string;
  checkpoint: number;
  state: string;
  updated_at: string;
}

export interface Loaded {
  streamId: string;
  checkpoint: number;
  stateJson: string;
}

/** The host's SQLite file: one row per (project, path, subscription key, slug). */
export class ProcessorStore {
  private readonly db: Database.Database;
  private readonly selectRow: Database.Statement<[string, string, string, string], Row>;
  private readonly upsertRow: Database.Statement<[string, string, string, string, string, number, string, string]>;

  constructor(dbPath: string, durability: 'full' | 'relaxed' = 'full') {
    mkdirSync(dirname(dbPath), { recursive: true });
    this.db = new Database(dbPath);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma(`synchronous = ${durability === 'full' ? 'FULL' : 'NORMAL'}`);
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS processor_state (
      project TEXT NOT NULL,
      path TEXT NOT NULL,
      subscription_key TEXT NOT NULL,
      slug TEXT NOT NULL,
      stream_id TEXT NOT NULL,
      checkpoint INTEGER NOT NULL,
      state TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (project, path, subscription_key, slug)
    ) WITHOUT ROWID`);
    this.selectRow = this.db.prepare(
      'SELECT stream_id, checkpoint, state, updated_at FROM processor_state WHERE project = ? AND path = ? AND subscription_key = ? AND slug = ?',
    );
    // One statement writes state and checkpoint together: they are committed atomically or not at all.
    this.upsertRow = this.db.prepare(
      `INSERT INTO processor_state (project, path, subscription_key, slug, stream_id, checkpoint, state, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project, path, subscription_key, slug) DO UPDATE SET
         stream_id = excluded.stream_id, checkpoint = excluded.checkpoint, state = excluded.state, updated_at = excluded.updated_at`,
    );
  }

  load(projectId: string | null, path: string, subscriptionKey: string, slug: string): Loaded | undefined {
    const row = this.selectRow.get(projectId ?? '', path, subscriptionKey, slug);
    return row ? { streamId: row.stream_id, checkpoint: row.checkpoint, stateJson: row.state } : undefined;
  }

  save(projectId: string | null, path: string, subscriptionKey: string, slug: string, value: Loaded): void {
    this.upsertRow.run(projectId ?? '', path, subscriptionKey, slug, value.streamId, value.checkpoint, value.stateJson, new Date().toISOString());
  }

  read<S = unknown>(projectId: string | null, path: string, subscriptionKey: string, slug: string): ProcessorRecord<S> | undefined {
    const row = this.selectRow.get(projectId ?? '', path, subscriptionKey, slug);
    if (!row) return undefined;
    return { projectId, path, subscriptionKey, slug, streamId: row.stream_id, checkpoint: row.checkpoint, state: JSON.parse(row.state) as S, updatedAt: row.updated_at };
  }

  list(): ProcessorRecord[] {
    const rows = this.db
      .prepare('SELECT project, path, subscription_key, slug, stream_id, checkpoint, state, updated_at FROM processor_state ORDER BY project, path, subscription_key, slug')
      .all() as (Row & { project: string; path: string; subscription_key: string; slug: string })[];
    return rows.map((r) => ({
      projectId: r.project === '' ? null : r.project,
      path: r.path,
      subscriptionKey: r.subscription_key,
      slug: r.slug,
      streamId: r.stream_id,
      checkpoint: r.checkpoint,
      state: JSON.parse(r.state) as unknown,
      updatedAt: r.updated_at,
    }));
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
