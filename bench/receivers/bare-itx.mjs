#!/usr/bin/env node
/**
 * The bare capnweb caller of bench/receivers' itx-call baseline, in a process of its own started
 * with each round, so that it starts as cold as the server it is compared with:
 * `bare-itx.mjs <ws url> <batches.json>` (`{head, sizes, events}`) connects and prints
 * "listening on <url>"; on the stdin line `run` it sends the events in batches of exactly `sizes`
 * with `processEventBatch`, one call after another, and prints `done <seconds>`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const [url, file] = process.argv.slice(2);
const { head, sizes, events } = JSON.parse(readFileSync(file, 'utf8'));
const { newWebSocketRpcSession } = await import(pathToFileURL(join(root, 'node_modules', 'capnweb', 'dist', 'index.js')).href);
const { WebSocket } = await import(pathToFileURL(join(root, 'node_modules', 'ws', 'wrapper.mjs')).href);
globalThis.WebSocket ??= WebSocket;
const ws = new WebSocket(url);
await new Promise((r, j) => (ws.once('open', r), ws.once('error', j)));
const stub = newWebSocketRpcSession(ws);
console.log(`listening on ${url}`);
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== 'run') continue;
  const t0 = performance.now();
  let at = 0;
  for (const n of sizes) {
    const slice = events.slice(at, at + n);
    at += n;
    await stub.processEventBatch({ projectId: null, path: '/bench/itx', streamId: 's', streamCreatedAt: '', subscriptionKey: 'itx', cursorChangedAtSourceOffset: 1, deliveryId: 'd', attempt: 1, streamMaxOffset: head, events: slice });
  }
  console.log(`done ${(performance.now() - t0) / 1000}`);
}
stub[Symbol.dispose]();
ws.close();
