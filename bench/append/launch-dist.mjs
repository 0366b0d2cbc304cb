/**
 * Starts a Rivulet server from a given build of packages/server (its `dist` folder) for A/B runs:
 * `run.mjs --variant NAME=DIR` with DIR a dist folder runs
 *
 *   node bench/append/launch-dist.mjs --dist DIR serve --port 0 --data DATA --durability MODE
 *
 * The folder must resolve the server's dependencies, so keep copies inside the repository (for
 * example bench/.variants/NAME/dist, ignored by git). Prints "rivulet listening on URL".
 */
import { resolve, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { existsSync } from 'node:fs';

/** The Node host module of a dist folder: hosts/node/serve.js, or hosts/node.js in builds before that move. */
function nodeHostOf(dist) {
  const current = join(resolve(dist), 'hosts', 'node', 'serve.js');
  return existsSync(current) ? current : join(resolve(dist), 'hosts', 'node.js');
}
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    dist: { type: 'string' },
    port: { type: 'string', default: '0' },
    data: { type: 'string' },
    durability: { type: 'string', default: 'full' },
  },
  allowPositionals: true,
});
if (!values.dist || !values.data) throw new Error('usage: launch-dist.mjs --dist DIR serve --port N --data DIR --durability MODE');
const { startNodeServer } = await import(pathToFileURL(nodeHostOf(values.dist)).href);
const server = await startNodeServer({ port: Number(values.port), host: '127.0.0.1', data: values.data, durability: values.durability });
process.stdout.write(`rivulet listening on ${server.url} (dist ${values.dist})\n`);
const stop = () => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
