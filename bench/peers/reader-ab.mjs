#!/usr/bin/env node
/**
 * The catch-up reader's own share (bench/README "catch-up reads (reads group)"): one server of the
 * built CLI (or `--cli PATH`) holding a stream of `--events` events, read through from its start
 * in pages of 500 by the first reader (load.mjs rawClientRead: append/raw-http-client.mjs, body not
 * looked at, offsets assumed) and by read-client.mjs (every event's offset found, the next page
 * taken from the last), passes alternating, medians of `--rounds`. Prints events/s, the server's
 * CPU per event and the reader's.
 *
 *   node bench/peers/reader-ab.mjs [--rounds 7] [--events 200000] [--cli PATH]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CLI, procCpuMs, startServer, stopServer, tempFolders } from '../lib/processes.mjs';
import { eventBody, rawClientRead } from './load.mjs';
import { catchUpRead } from './read-client.mjs';
import { median } from './verdict.mjs';

const { values: flags } = parseArgs({ options: { rounds: { type: 'string', default: '7' }, events: { type: 'string', default: '200000' }, cli: { type: 'string', default: CLI } } });
const rounds = Number(flags.rounds);
const count = Number(flags.events);
const loadavg = () => readFileSync('/proc/loadavg', 'utf8').trim();

const server = await startServer([flags.cli, 'serve', '--port', '0', '--data', tempFolders('rivulet-bench-reader-')('ab'), '--durability', 'full'], 'reader-ab');
try {
  for (let done = 0; done < count; ) {
    const n = Math.min(1000, count - done);
    const body = `[${Array.from({ length: n }, (_, i) => eventBody(0, done + i, false).toString()).join(',')}]`;
    const response = await fetch(`${server.url}/v1/streams/bench/read`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    if (!response.ok) throw new Error(`preload answered ${response.status}`);
    await response.arrayBuffer();
    done += n;
  }
  console.log(`load ${loadavg()}`);
  const readers = { 'raw-client': rawClientRead, 'read-client': catchUpRead };
  const runs = Object.fromEntries(Object.keys(readers).map((k) => [k, []]));
  const args = { url: server.url, path: '/v1/streams/bench/read', firstOffset: 1, lastOffset: count + 1, page: 500 };
  // One pass of each first, not counted: a fresh server's first pass costs more (bench/README).
  for (const read of Object.values(readers)) await read(args);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? Object.keys(readers) : Object.keys(readers).reverse();
    for (const name of order) {
      const cpu0 = procCpuMs(server.child.pid);
      const mine0 = process.cpuUsage();
      const r = await readers[name](args);
      const mine = process.cpuUsage(mine0);
      const events = count + 1;
      runs[name].push({ perSec: events / r.seconds, server: ((procCpuMs(server.child.pid) - cpu0) * 1000) / events, reader: (mine.user + mine.system) / events });
    }
  }
  for (const [name, rs] of Object.entries(runs)) {
    const m = (k) => median(rs.map((r) => r[k]));
    console.log(`${name.padEnd(12)} ${Math.round(m('perSec')).toLocaleString('en')} events/s, server ${m('server').toFixed(2)} µs CPU/event, reader ${m('reader').toFixed(2)} µs CPU/event`);
  }
  console.log(`load ${loadavg()}`);
} finally {
  await stopServer(server);
}
