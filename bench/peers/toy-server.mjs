/**
 * The group-commit toy of bench/peers (issue 19): the least an HTTP append endpoint with
 * idempotency keys and fsync-before-answer can do on this machine. node:http; every request read
 * during one event-loop turn joins one better-sqlite3 transaction (WAL, synchronous=FULL), flushed
 * by setImmediate; each event is `INSERT … ON CONFLICT (stream, idem) DO NOTHING` on a unique key,
 * so a repeated key answers the stored offset. Answers only after COMMIT returned (fsync done).
 * No validation, no state, no subscriptions: what Rivulet must match with all of them on.
 *
 *   node bench/peers/toy-server.mjs --port 0 --data DIR
 *
 * prints "toy listening on http://127.0.0.1:PORT"; stops on SIGTERM/SIGINT.
 */
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    data: { type: 'string' },
  },
});
if (!values.data) throw new Error('--data DIR is required');
mkdirSync(values.data, { recursive: true });

const db = new Database(join(values.data, 'toy.db'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = FULL');
db.pragma('wal_autocheckpoint = 4000');
db.exec(`CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  idem TEXT,
  created_ms INTEGER NOT NULL,
  body TEXT NOT NULL
)`);
db.exec('CREATE UNIQUE INDEX IF NOT EXISTS events_idem ON events (stream, idem)');
const insert = db.prepare(
  'INSERT INTO events (stream, idem, created_ms, body) VALUES (?, ?, ?, ?) ON CONFLICT (stream, idem) DO NOTHING RETURNING id',
);
const existing = db.prepare('SELECT id FROM events WHERE stream = ? AND idem = ?');

/** Requests waiting for the next group commit: {stream, events, res}. */
let pending = [];
let scheduled = false;

const commitAll = db.transaction((batch, now) => {
  const answers = [];
  for (const { stream, events } of batch) {
    const offsets = [];
    for (const e of events) {
      const idem = typeof e.idempotencyKey === 'string' ? e.idempotencyKey : null;
      const row = insert.get(stream, idem, now, JSON.stringify(e)) ?? existing.get(stream, idem);
      offsets.push(row.id);
    }
    answers.push(offsets);
  }
  return answers;
});

function flush() {
  scheduled = false;
  const batch = pending;
  pending = [];
  let answers;
  try {
    answers = commitAll(batch, Date.now());
  } catch (error) {
    for (const { res } of batch) reply(res, 500, JSON.stringify({ error: String(error) }));
    return;
  }
  batch.forEach(({ res }, i) => reply(res, 200, `{"offsets":[${answers[i].join(',')}]}`));
}

function reply(res, status, text) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  if (req.method !== 'POST') return reply(res, 404, '{"error":"not found"}');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return reply(res, 400, '{"error":"bad json"}');
    }
    pending.push({ stream: req.url, events: Array.isArray(body) ? body : [body], res });
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), values.host, () => {
  process.stdout.write(`toy listening on http://${values.host}:${server.address().port}\n`);
});

function stop() {
  server.close(() => {
    db.close();
    process.exit(0);
  });
  server.closeAllConnections?.();
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
