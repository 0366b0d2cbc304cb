#!/usr/bin/env node
/**
 * The itx-call worker of bench/receivers: connects to a Rivulet server with the SDK, serves
 * `processEventBatch` under the name given, and prints one line per batch received:
 * `BATCH <events> <lastOffset> <receivedAtMs> <oldest createdAt ms>` (for throughput and latency).
 * Also serves as the callee of the bare capnweb baseline (`--bare PORT`: a plain capnweb server).
 */
import { parseArgs } from 'node:util';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const { values } = parseArgs({ options: { url: { type: 'string' }, name: { type: 'string', default: 'bench' }, bare: { type: 'boolean', default: false } } });
const client = await import(pathToFileURL(join(root, 'packages', 'client', 'dist', 'index.js')).href);

const out = [];
let pending = '';
function record(batch) {
  const events = batch.events ?? [];
  const last = events.at(-1);
  pending += `BATCH ${events.length} ${last?.offset ?? 0} ${Date.now()} ${events[0] ? Date.parse(events[0].createdAt) : 0}\n`;
  if (pending.length > 4096) flush();
  return { ok: true };
}
function flush() {
  if (pending) process.stdout.write(pending);
  pending = '';
}
setInterval(flush, 20).unref();
void out;

if (values.bare) {
  // A bare capnweb callee: the same handler behind a plain WebSocket RPC server.
  const { newWebSocketRpcSession, RpcTarget } = await import(pathToFileURL(join(root, 'node_modules', 'capnweb', 'dist', 'index.js')).href);
  const { WebSocketServer, WebSocket } = await import(pathToFileURL(join(root, 'node_modules', 'ws', 'wrapper.mjs')).href);
  globalThis.WebSocket ??= WebSocket;
  class Worker extends RpcTarget {
    processEventBatch(batch) {
      return record(batch);
    }
  }
  const server = createServer();
  const wss = new WebSocketServer({ server, maxPayload: 64 * 1024 * 1024 });
  wss.on('connection', (ws) => newWebSocketRpcSession(ws, new Worker()));
  server.listen(0, '127.0.0.1', () => console.log(`listening on ws://127.0.0.1:${server.address().port}`));
} else {
  const itx = await client.connect(values.url);
  const served = client.serveWorker(itx, values.name, { processEventBatch: record });
  await served.ready;
  console.log(`listening on ${values.url} as worker ${values.name}`);
}
process.on('SIGTERM', () => {
  flush();
  process.exit(0);
});
