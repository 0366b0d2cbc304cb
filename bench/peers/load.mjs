/**
 * Load of bench/peers over loopback with the append benchmark's raw HTTP client
 * (bench/append/raw-http-client.mjs, ~20 µs of generator CPU per request): closed-loop appenders
 * whose every request carries a fresh event (and, on demand, a unique idempotency key), and a
 * sequential catch-up reader.
 */
import { performance } from 'node:perf_hooks';
import { RawConnection } from '../append/raw-http-client.mjs';

const TEXT = 'the quick brown fox jumps over the lazy dog 0123456789';

/** One event of about 150 bytes of JSON; `key` adds a unique idempotency key. */
export function eventBody(client, seq, key) {
  const idem = key ? `,"idempotencyKey":"c${client}-${seq}"` : '';
  return Buffer.from(
    `{"type":"bench/e","payload":{"seq":${seq},"client":${client},"user":"u-${String(seq % 1000).padStart(5, '0')}","text":"${TEXT}"}${idem}}`,
  );
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/**
 * Closed-loop appenders: `clients` connections, each POSTs one event to a random one of `streams`
 * paths, waits for the answer, posts the next. Counts answers inside [warm-up, warm-up + duration].
 */
export async function appendLoad({ url, clients, streams, keys, warmupMs, durationMs, pathOf }) {
  const target = new URL(url);
  const conns = Array.from({ length: clients }, () => new RawConnection(target.hostname, Number(target.port)));
  const latencies = [];
  let errors = 0;
  let firstError = null;
  let total = 0;
  const started = performance.now();
  const from = started + warmupMs;
  const to = from + durationMs;
  await Promise.all(
    conns.map(async (conn, c) => {
      for (let k = 0; ; k++) {
        const t0 = performance.now();
        if (t0 >= to) return;
        const { status, text } = await conn.request('POST', pathOf(Math.floor(Math.random() * streams)), eventBody(c, k, keys));
        const t1 = performance.now();
        total++;
        if (status !== 200) {
          errors++;
          firstError ??= `${status} ${text.slice(0, 300)}`;
          if (errors > 100) return;
        } else if (t1 >= from && t1 < to) latencies.push(t1 - t0);
      }
    }),
  );
  for (const conn of conns) conn.close();
  latencies.sort((a, b) => a - b);
  return {
    perSec: latencies.length / (durationMs / 1000),
    p50ms: percentile(latencies, 50),
    p99ms: percentile(latencies, 99),
    totalRequests: total,
    errors,
    firstError,
  };
}

/**
 * The first catch-up reader, kept as the baseline of peers/reader-ab.mjs (run.mjs reads with
 * read-client.mjs): GET …?afterOffset=N&limit=page one page after the other, until `lastOffset`,
 * each next page `page` offsets later, the body not looked at. Answers pages and seconds.
 */
export async function rawClientRead({ url, path, firstOffset, lastOffset, page }) {
  const target = new URL(url);
  const conn = new RawConnection(target.hostname, Number(target.port));
  const t0 = performance.now();
  let pages = 0;
  for (let after = firstOffset - 1; after < lastOffset; after += page) {
    const { status, text } = await conn.request('GET', `${path}?afterOffset=${after}&limit=${page}`);
    if (status !== 200) throw new Error(`catch-up read answered ${status}: ${text.slice(0, 300)}`);
    pages++;
  }
  const seconds = (performance.now() - t0) / 1000;
  conn.close();
  return { pages, seconds, events: lastOffset - firstOffset + 1 };
}
