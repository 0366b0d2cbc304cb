#!/usr/bin/env node
/** The receiver of bench/receivers: answers 204 to every POST and prints `HIT <path> <n> <ms>`. */
import { createServer } from 'node:http';

let pending = '';
let n = 0;
const flush = () => {
  if (pending) process.stdout.write(pending);
  pending = '';
};
setInterval(flush, 20).unref();
const server = createServer((req, res) => {
  req.resume();
  req.once('end', () => {
    res.writeHead(204);
    res.end();
    if (!req.url.startsWith('/baseline')) {
      pending += `HIT ${req.url} ${++n} ${Date.now()}\n`;
      if (pending.length > 4096) flush();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${server.address().port}`));
process.on('SIGTERM', () => {
  flush();
  process.exit(0);
});
