/**
 * The memory and idle group of bench/peers (issue 19 §4): a server holding many streams, each with
 * one copy subscription, measured against an empty server of the same build and flags for its
 * resident memory once creation has settled, and for the CPU it spends doing nothing. Also NATS
 * JetStream with as many sourcing streams, for comparison.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { RawConnection } from '../append/raw-http-client.mjs';
import { procCpuMs } from '../lib/processes.mjs';
import { cpuShare, settled } from './verdict.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The resident set of `pid` in MB (VmRSS of /proc/PID/status); NaN once it is gone. */
export function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : NaN;
  } catch {
    return NaN;
  }
}

/**
 * Waits until the RSS of `pid` has settled (the samples of the last `window` seconds within
 * `toleranceMb`, at most `maxMs`), then measures its CPU over `idleMs` of doing nothing and its RSS
 * at the end. Answers {rssMb, idleCpuPct, settleSeconds, settledInTime}.
 */
export async function settleAndIdle(pid, { idleMs, maxSettleMs = 60_000, window = 5, toleranceMb = 1 }) {
  const samples = [];
  const t0 = performance.now();
  while (!settled(samples, window, toleranceMb) && performance.now() - t0 < maxSettleMs) {
    samples.push(rssMb(pid));
    await sleep(1000);
  }
  const settledInTime = settled(samples, window, toleranceMb);
  const cpu0 = procCpuMs(pid);
  const w0 = performance.now();
  await sleep(idleMs);
  const share = cpuShare(procCpuMs(pid) - cpu0, performance.now() - w0);
  return { rssMb: rssMb(pid), idleCpuPct: share * 100, settleSeconds: (w0 - t0) / 1000, settledInTime: settledInTime ? 1 : 0 };
}

/**
 * Creates `count` source streams on a Rivulet server, each by one `subscribeToEventsFrom` of its
 * own receiving stream (`start: "now"`: nothing is owed, so no copy is made and the receiving
 * streams are never created), over `connections` keep-alive connections.
 */
export async function createRivuletSubscriptions(url, count, connections = 16) {
  const target = new URL(url);
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const conn = new RawConnection(target.hostname, Number(target.port));
      try {
        for (let i = next++; i < count; i = next++) {
          const body = Buffer.from(JSON.stringify({ sourceStreamPath: `/idle/src-${i}`, subscriptionKey: 'copy', delivery: { start: 'now' } }));
          const { status, text } = await conn.request('POST', `/v1/streams/idle/dst-${i}:subscribeToEventsFrom`, body);
          if (status !== 200) throw new Error(`subscribeToEventsFrom ${i} answered ${status}: ${text.slice(0, 300)}`);
        }
      } finally {
        conn.close();
      }
    }),
  );
}

/**
 * NATS: `count` file streams, each sourced by one more stream (2 × count streams), created within
 * `budgetMs`; answers how many pairs were created, whether all were, and why it stopped early (NATS
 * 2.9 slows down with many streams until its API requests time out: the pairs made so far are
 * measured then).
 */
export async function createNatsSources(nats, count, budgetMs) {
  const { connect, StorageType } = await import('nats');
  const nc = await connect({ servers: `127.0.0.1:${nats.port}` });
  const t0 = performance.now();
  let made = 0;
  let stopped = null;
  try {
    const jsm = await nc.jetstreamManager({ timeout: 20_000 });
    for (let i = 0; i < count && performance.now() - t0 < budgetMs; i++) {
      await jsm.streams.add({ name: `SRC${i}`, subjects: [`src.${i}`], storage: StorageType.File });
      await jsm.streams.add({ name: `DST${i}`, storage: StorageType.File, sources: [{ name: `SRC${i}` }] });
      made++;
    }
    stopped = made < count ? 'the time budget' : null;
  } catch (error) {
    stopped = `${error.code ?? error.message} creating pair ${made}`;
  } finally {
    await nc.close();
  }
  return { made, stopped, createSeconds: (performance.now() - t0) / 1000 };
}
