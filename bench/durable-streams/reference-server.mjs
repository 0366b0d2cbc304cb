#!/usr/bin/env node
/**
 * The reference Durable Streams server (@durable-streams/server, a dev dependency) for
 * bench/durable-streams: `node reference-server.mjs memory` or `node reference-server.mjs file DIR`.
 * Prints "listening on URL" once it answers on a free loopback port.
 */
import { DurableStreamTestServer } from '@durable-streams/server';

const [mode, dir] = process.argv.slice(2);
if (mode !== 'memory' && !(mode === 'file' && dir)) {
  console.error('usage: reference-server.mjs memory | file DIR');
  process.exit(2);
}
const server = new DurableStreamTestServer({ port: 0, host: '127.0.0.1', longPollTimeout: 1000, ...(mode === 'file' ? { dataDir: dir } : {}) });
const url = await server.start();
console.log(`listening on ${url}`);
process.on('SIGTERM', () => {
  void server.stop().then(() => process.exit(0));
});
