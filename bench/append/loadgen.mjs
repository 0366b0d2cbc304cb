/**
 * The load generator of bench/append: closed-loop clients, one keep-alive connection each. Every
 * client sends one request, waits for the whole answer, sends the next. Requests finishing inside
 * the measurement window (after the warm-up) count; latency is from writing the request to the end
 * of the answer.
 *
 * Two clients: `raw` (raw-http-client.mjs, the default of bench/append since 2026-11-30 14:00) and
 * `http` (node:http with a keep-alive Agent, one socket per client; what every earlier result
 * used). node:http costs ~50 µs of generator CPU per request, enough to saturate a core under
 * scenario (b) on this 2-core machine; see bench/README.
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { RawConnection } from './raw-http-client.mjs';

const TEXT = 'the quick brown fox jumps over the lazy dog 0123456789';

/** One event of about 100 bytes of payload (the whole event JSON is about 130 bytes). */
export function eventJson(seq, client) {
  return `{"type":"bench/e","payload":{"seq":${seq},"client":${client},"user":"u-${String(seq % 1000).padStart(5, '0')}","text":"${TEXT}"}}`;
}

/** A pool of prepared request bodies (Buffers), so the generator spends no time building them. */
export function bodies(batch, count = 64) {
  const out = [];
  let seq = 0;
  for (let i = 0; i < count; i++) {
    if (batch <= 1) out.push(Buffer.from(eventJson(seq++, i)));
    else {
      const events = [];
      for (let j = 0; j < batch; j++) events.push(eventJson(seq++, i));
      out.push(Buffer.from(`[${events.join(',')}]`));
    }
  }
  return out;
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * @param {object} o
 * @param {string} o.url  base URL of the server
 * @param {(client: number, k: number) => string} o.path  request path of the k-th request of a client
 * @param {number} o.clients  concurrent closed-loop clients
 * @param {number} o.batch  events per request
 * @param {number} o.warmupMs
 * @param {number} o.durationMs  measurement window
 * @param {'raw' | 'http'} [o.client]  the HTTP client (default http)
 */
export async function runLoad(o) {
  const target = new URL(o.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.clients, maxFreeSockets: o.clients, scheduling: 'fifo' });
  const pool = bodies(o.batch);
  const latencies = [];
  let errors = 0;
  let firstError = null;
  const statusCounts = {};
  const started = performance.now();
  const measureFrom = started + o.warmupMs;
  const measureTo = measureFrom + o.durationMs;
  let counted = 0;
  let total = 0;

  const raw = o.client === 'raw' ? Array.from({ length: o.clients }, () => new RawConnection(target.hostname, Number(target.port))) : null;
  const post = (c, path, body) =>
    raw ? raw[c].request('POST', path, body) : httpPost(path, body);
  const httpPost = (path, body) =>
    new Promise((resolve) => {
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': body.length },
        },
        (res) => {
          let text = '';
          const keep = res.statusCode !== 200;
          res.on('data', (c) => {
            if (keep) text += c;
          });
          res.on('end', () => resolve({ status: res.statusCode, text }));
        },
      );
      req.on('error', (error) => resolve({ status: 0, text: String(error) }));
      req.end(body);
    });

  const client = async (c) => {
    for (let k = 0; ; k++) {
      const t0 = performance.now();
      if (t0 >= measureTo) return;
      const { status, text } = await post(c, o.path(c, k), pool[(c * 7 + k) % pool.length]);
      const t1 = performance.now();
      statusCounts[status] = (statusCounts[status] ?? 0) + 1;
      total++;
      if (status !== 200) {
        errors++;
        firstError ??= `${status} ${text.slice(0, 300)}`;
        if (errors > 1000) return;
      }
      if (t1 >= measureFrom && t1 < measureTo && status === 200) {
        counted++;
        latencies.push(t1 - t0);
      }
    }
  };

  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - started;
  agent.destroy();
  for (const conn of raw ?? []) conn.close();
  latencies.sort((a, b) => a - b);
  const seconds = o.durationMs / 1000;
  return {
    clients: o.clients,
    client: raw ? 'raw' : 'http',
    batch: o.batch,
    seconds,
    requests: counted,
    /** Every request of the run, warm-up included (for CPU per request). */
    totalRequests: total,
    requestsPerSec: counted / seconds,
    eventsPerSec: (counted * o.batch) / seconds,
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    maxms: latencies.length ? latencies[latencies.length - 1] : NaN,
    errors,
    firstError,
    statusCounts,
    /** CPU the generator itself used, as a share of one core over the whole run. */
    loadgenCpu: (cpu.user + cpu.system) / 1000 / wall,
  };
}
