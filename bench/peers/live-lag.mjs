/**
 * The live copy lag group of bench/peers (issue 19 §2): a steady, bounded publish rate into a
 * source, and a live reader of the copy on the target, on one clock in this process. The lag of an
 * event is the time from the source's acknowledgement of its append (the answer arriving here) to
 * its copy arriving here from the target. Both sides publish the same ~150-byte JSON bodies at the
 * same rate, each event tagged with its number, and both readers parse each copy to find it.
 *
 * - Rivulet: `POST /v1/streams/live/src` (one event per request, over a pool of keep-alive
 *   connections, `full` durability: answered after fsync), a copy subscription into /live/dst,
 *   and an SSE reader of /live/dst (protocol §5.2: it shows durable events only, so a copy is
 *   counted once its own commit on the target is synced).
 * - NATS JetStream: `js.publish` into stream SRC (answered when SRC stored it), a stream DST
 *   sourcing SRC, and an ordered consumer of DST.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { RawConnection } from '../append/raw-http-client.mjs';
import { call } from '../lib/report.mjs';
import { procCpuMs } from '../lib/processes.mjs';
import { eventBody } from './load.mjs';
import { copyLags, dueCount, percentile } from './verdict.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Publishes items 0 … count−1 at `rate` per second, each when it is due (not waiting for earlier
 * answers), and records when each answer came (`ackAt[i]`); resolves once every answer is in.
 */
async function pacedPublish({ rate, count, publish, ackAt }) {
  const pending = [];
  const t0 = performance.now();
  for (let sent = 0; sent < count; ) {
    const due = dueCount(performance.now() - t0, rate, count);
    for (; sent < due; sent++) {
      const i = sent;
      pending.push(publish(i).then(() => (ackAt[i] = performance.now())));
    }
    if (sent < count) await sleep(1);
  }
  await Promise.all(pending);
  return (performance.now() - t0) / 1000;
}

/** Waits until `seenAt` has every one of `count` items, at most `timeoutMs`; answers how many are missing. */
async function allSeen(seenAt, count, timeoutMs) {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    let missing = 0;
    for (let i = 0; i < count; i++) if (seenAt[i] === undefined) missing++;
    if (missing === 0 || performance.now() > deadline) return missing;
    await sleep(20);
  }
}

/** Lag figures of the measured items (the warm-up ones left out); throws when a copy never came. */
function figures(label, ackAt, seenAt, warm, seconds, cpuMs, count) {
  const { lags, missing } = copyLags(ackAt.slice(warm), seenAt.slice(warm));
  if (missing > 0) throw new Error(`${label}: ${missing} of ${count - warm} copies never arrived`);
  return {
    lagP50ms: percentile(lags, 50),
    lagP99ms: percentile(lags, 99),
    lagMaxms: percentile(lags, 100),
    perSec: count / seconds,
    cpuUsPerEvent: (cpuMs * 1000) / count,
  };
}

/** An SSE reader of `path` calling `onEvent(event, at)` for each event frame; resolves once open. */
function sseReader(url, path, onEvent) {
  return new Promise((resolve, reject) => {
    const request = http.get(`${url}${path}?live=sse`, (response) => {
      if (response.statusCode !== 200) return reject(new Error(`SSE ${path} answered ${response.statusCode}`));
      response.setEncoding('utf8');
      let buffer = '';
      let open = false;
      response.on('data', (chunk) => {
        const at = performance.now();
        buffer += chunk;
        let end;
        while ((end = buffer.indexOf('\n\n')) !== -1) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (!open && frame.includes('event: stream')) {
            open = true;
            resolve({ close: () => request.destroy() });
          }
          if (!frame.includes('event: event')) continue;
          const data = frame.split('\n').find((l) => l.startsWith('data: '));
          if (data) onEvent(JSON.parse(data.slice(6)), at);
        }
      });
    });
    request.on('error', (error) => reject(error));
  });
}

/** Keep-alive connections of the Rivulet publisher: enough for the answers in flight at the rate. */
const POOL = 32;

/**
 * `size` keep-alive connections, opened (by one read each) before the measurement; `acquire()`
 * waits for a free one, so a slow server makes requests queue here rather than open connections.
 */
async function connectionPool(target, size) {
  const idle = Array.from({ length: size }, () => new RawConnection(target.hostname, Number(target.port)));
  await Promise.all(idle.map((conn) => conn.request('GET', '/v1/streams/live/src?limit=1')));
  const waiting = [];
  return {
    acquire: () => (idle.length ? Promise.resolve(idle.pop()) : new Promise((resolve) => waiting.push(resolve))),
    release: (conn) => (waiting.length ? waiting.shift()(conn) : idle.push(conn)),
    close: () => idle.forEach((conn) => conn.close()),
  };
}

/** Rivulet's live copy lag on a started server: `count` events at `rate`/s, the first `warm` not measured. */
export async function rivuletLiveLag(server, { rate, count, warm, timeoutMs }) {
  const target = new URL(server.url);
  // The target exists before the reader opens, so the reader follows one lifetime from its start.
  await call(server.url, 'POST', '/v1/streams/live/dst', { type: 'bench/opened', payload: {} });
  const seenAt = [];
  const reader = await sseReader(server.url, '/v1/streams/live/dst', (event, at) => {
    if (event.type === 'bench/e') seenAt[event.payload.seq] ??= at;
  });
  try {
    await call(server.url, 'POST', '/v1/streams/live/dst:subscribeToEventsFrom', { sourceStreamPath: '/live/src', subscriptionKey: 'live', delivery: { start: 'now' } });
    const pool = await connectionPool(target, POOL);
    const publish = async (i) => {
      const conn = await pool.acquire();
      const { status, text } = await conn.request('POST', '/v1/streams/live/src', eventBody(0, i, false));
      pool.release(conn);
      if (status !== 200) throw new Error(`append ${i} answered ${status}: ${text.slice(0, 300)}`);
    };
    const ackAt = [];
    const cpu0 = procCpuMs(server.child.pid);
    const seconds = await pacedPublish({ rate, count, publish, ackAt });
    await allSeen(seenAt, count, timeoutMs);
    const cpuMs = procCpuMs(server.child.pid) - cpu0;
    pool.close();
    return figures('rivulet-lag', ackAt, seenAt, warm, seconds, cpuMs, count);
  } finally {
    reader.close();
  }
}

/** NATS's live copy lag on a started server: the same events through SRC, sourced into DST. */
export async function natsLiveLag(nats, { rate, count, warm, timeoutMs }) {
  const { connect, StorageType } = await import('nats');
  const nc = await connect({ servers: `127.0.0.1:${nats.port}` });
  try {
    const jsm = await nc.jetstreamManager();
    const js = nc.jetstream();
    await jsm.streams.add({ name: 'SRC', subjects: ['src.>'], storage: StorageType.File });
    await jsm.streams.add({ name: 'DST', storage: StorageType.File, sources: [{ name: 'SRC' }] });
    const seenAt = [];
    const messages = await (await js.consumers.get('DST')).consume();
    const reading = (async () => {
      for await (const m of messages) {
        const at = performance.now();
        seenAt[JSON.parse(m.string()).payload.seq] ??= at;
      }
    })();
    const ackAt = [];
    const cpu0 = procCpuMs(nats.pid);
    const seconds = await pacedPublish({ rate, count, publish: (i) => js.publish('src.e', eventBody(0, i, false)), ackAt });
    await allSeen(seenAt, count, timeoutMs);
    const cpuMs = procCpuMs(nats.pid) - cpu0;
    await messages.close();
    await reading;
    return figures('nats-lag', ackAt, seenAt, warm, seconds, cpuMs, count);
  } finally {
    await nc.close();
  }
}
