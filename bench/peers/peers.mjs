/**
 * The real peers of bench/peers: Redis (XADD with appendfsync always, XRANGE) driven by its own
 * redis-benchmark, and NATS JetStream stream sourcing driven through the `nats` npm client. Each
 * server runs as a tracked child with its own temporary data folder on a free loopback port.
 */
import { spawn, spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { freePort, procCpuMs, runToEnd, startProgram, track } from '../lib/processes.mjs';
import { parseRedisBenchmarkCsv } from './verdict.mjs';

const DEBIAN = { 'redis-server': 'redis-server', 'redis-benchmark': 'redis-tools', 'redis-cli': 'redis-tools', 'nats-server': 'nats-server', wrk: 'wrk' };

const onPath = (program) => spawnSync('sh', ['-c', `command -v ${program}`]).status === 0;

/**
 * Makes sure `programs` are installed: as root with apt-get and `install` on, installs the missing
 * ones from Debian; answers null when all are there, else the reason to print on a SKIP line.
 */
export function ensurePrograms(programs, install) {
  let missing = programs.filter((p) => !onPath(p));
  if (missing.length === 0) return null;
  const packages = [...new Set(missing.map((p) => DEBIAN[p]))];
  if (install && process.getuid?.() === 0 && onPath('apt-get')) {
    console.log(`installing ${packages.join(' ')} (apt-get install -y; --no-install to skip)`);
    const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
    let r = spawnSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: 'ignore', env, timeout: 300_000 });
    if (r.status !== 0) {
      spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env, timeout: 300_000 });
      r = spawnSync('apt-get', ['install', '-y', '-qq', ...packages], { stdio: 'ignore', env, timeout: 300_000 });
    }
    missing = programs.filter((p) => !onPath(p));
    if (missing.length === 0) return null;
  }
  return `${missing.join(', ')} not installed: run \`apt-get install -y ${packages.join(' ')}\``;
}

/** A Redis server with AOF fsync'd on every write (appendfsync always), no RDB snapshots. */
export async function startRedis(dir) {
  const port = await freePort();
  const server = await startProgram(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '', '--daemonize', 'no'],
    /Ready to accept connections/,
    'redis-server',
  );
  return { ...server, port, pid: server.child.pid };
}

/** Runs redis-benchmark as a tracked child (killed with the others on exit), bounded by `timeoutMs`. */
async function redisBenchmark(port, args, timeoutMs) {
  return parseRedisBenchmarkCsv(await runToEnd('redis-benchmark', ['-h', '127.0.0.1', '-p', String(port), '--csv', ...args], timeoutMs));
}

/** `clients` redis-benchmark connections XADDing `requests` ~150-byte entries over 100 streams. */
export async function redisXadd(redis, { clients, requests, body, timeoutMs }) {
  const cpu0 = procCpuMs(redis.pid);
  const r = await redisBenchmark(redis.port, ['-c', String(clients), '-n', String(requests), '-r', '100', 'XADD', 'bench:__rand_int__', '*', 'e', body], timeoutMs);
  return { perSec: r.rps, p50ms: r.p50ms, p99ms: r.p99ms, cpuUsPerReq: ((procCpuMs(redis.pid) - cpu0) * 1000) / requests };
}

/** Loads `count` entries with ids 1-0 … count-0 into stream `s` through redis-cli --pipe. */
export function redisPreload(redis, count, body) {
  const child = track(spawn('redis-cli', ['-h', '127.0.0.1', '-p', String(redis.port), '--pipe'], { stdio: ['pipe', 'ignore', 'inherit'] }));
  const bulk = (s) => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  const tail = bulk('e') + bulk(body);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`redis-cli --pipe exited ${code}`))));
    let i = 1;
    const write = () => {
      while (i <= count) {
        let chunk = '';
        for (let n = 0; n < 1000 && i <= count; n++, i++) chunk += `*5\r\n${bulk('XADD')}${bulk('s')}${bulk(`${i}-0`)}${tail}`;
        if (!child.stdin.write(chunk)) return child.stdin.once('drain', write);
      }
      child.stdin.end();
    };
    write();
  });
}

/** One client reading `pages` XRANGE pages of `page` entries, each from a random id of the stream. */
export async function redisXrange(redis, { count, page, pages, timeoutMs }) {
  const cpu0 = procCpuMs(redis.pid);
  const r = await redisBenchmark(redis.port, ['-c', '1', '-n', String(pages), '-r', String(count - page), 'XRANGE', 's', '__rand_int__', '+', 'COUNT', String(page)], timeoutMs);
  return { eventsPerSec: r.rps * page, cpuUsPerEvent: ((procCpuMs(redis.pid) - cpu0) * 1000) / (pages * page) };
}

/** A NATS server with JetStream on file storage. */
export async function startNats(dir) {
  const port = await freePort();
  const server = await startProgram('nats-server', ['-js', '-sd', dir, '-a', '127.0.0.1', '-p', String(port)], /Server is ready/, 'nats-server');
  return { ...server, port, pid: server.child.pid };
}

/**
 * NATS's copy drain: `count` messages published into stream SRC (each acknowledged), then a
 * stream DST sourcing SRC is created and timed until it holds all of them.
 */
export async function natsSourcingDrain(nats, { count, body, timeoutMs }) {
  const { connect, StorageType } = await import('nats');
  const nc = await connect({ servers: `127.0.0.1:${nats.port}` });
  try {
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    await jsm.streams.add({ name: 'SRC', subjects: ['src.>'], storage: StorageType.File });
    const data = new TextEncoder().encode(body);
    for (let done = 0; done < count; ) {
      const n = Math.min(1000, count - done);
      await Promise.all(Array.from({ length: n }, () => js.publish('src.e', data)));
      done += n;
    }
    const cpu0 = procCpuMs(nats.pid);
    const t0 = performance.now();
    await jsm.streams.add({ name: 'DST', storage: StorageType.File, sources: [{ name: 'SRC' }] });
    const deadline = t0 + timeoutMs;
    for (;;) {
      const info = await jsm.streams.info('DST');
      if (info.state.messages >= count) break;
      if (performance.now() > deadline) throw new Error(`NATS sourcing copied ${info.state.messages} of ${count} in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
    const seconds = (performance.now() - t0) / 1000;
    return { perSec: count / seconds, seconds, cpuUsPerCopy: ((procCpuMs(nats.pid) - cpu0) * 1000) / count };
  } finally {
    await nc.close();
  }
}
