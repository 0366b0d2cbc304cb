/**
 * Baseline (1) of bench/append: the bare minimum an HTTP append endpoint does on this machine.
 * node:http, read the body, JSON.parse it, insert one row per event into better-sqlite3 (WAL,
 * synchronous FULL or NORMAL to match Rivulet's durability mode) in ONE transaction per request
 * (no group commit, no validation, no framework), answer a tiny JSON.
 *
 *   node bench/append/baseline-server.mjs --port 0 --data DIR --durability full|relaxed
 *
 * prints "baseline listening on http://127.0.0.1:PORT" once ready; stops on SIGTERM/SIGINT.
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
    durability: { type: 'string', default: 'full' },
  },
});
if (!values.data) throw new Error('--data DIR is required');
if (values.durability !== 'full' && values.durability !== 'relaxed') throw new Error('--durability must be full or relaxed');

mkdirSync(values.data, { recursive: true });
const db = new Database(join(values.data, 'baseline.db'));
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${values.durability === 'relaxed' ? 'NORMAL' : 'FULL'}`);
// The same checkpoint interval Rivulet uses, so both pay the same checkpoint cost.
db.pragma('wal_autocheckpoint = 4000');
db.exec(`CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY,
  stream TEXT NOT NULL,
  type TEXT NOT NULL,
  created_ms INTEGER NOT NULL,
  body TEXT NOT NULL
)`);
const insert = db.prepare('INSERT INTO events (stream, type, created_ms, body) VALUES (?, ?, ?, ?)');
const insertAll = db.transaction((stream, events, now) => {
  let last = 0;
  for (const e of events) last = insert.run(stream, String(e.type), now, JSON.stringify(e)).lastInsertRowid;
  return Number(last);
});

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
    const events = Array.isArray(body) ? body : [body];
    const last = insertAll(req.url, events, Date.now());
    reply(res, 200, `{"offset":${last},"count":${events.length}}`);
  });
});
server.keepAliveTimeout = 60_000;

server.listen(Number(values.port), values.host, () => {
  const { port } = server.address();
  process.stdout.write(`baseline listening on http://${values.host}:${port}\n`);
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
