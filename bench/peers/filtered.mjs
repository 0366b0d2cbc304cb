/**
 * The setup of the `subs` group of bench/peers (issue 19 §2: ten subscriptions with non-matching
 * filters cost < 5 % of append throughput): the append load's 100 streams, created before the load
 * either with `perStream` copy subscriptions each whose filter never matches the load's events, or
 * with one plain event each, so both servers start the load with the same streams in existence.
 */
import { RawConnection } from '../append/raw-http-client.mjs';

/** The event type none of the load's events has (they are all `bench/e`, load.mjs). */
export const NEVER_TYPE = 'bench/never';

/**
 * Creates streams `/bench/b-000` … on the server at `url`: with `perStream` > 0, each gets that
 * many `copy-to-stream` subscriptions (`filter.eventTypes: [NEVER_TYPE]`, `start: "now"`, each to
 * its own receiving stream, which therefore is never created); with 0, one `bench/created` event.
 */
export async function prepareStreams(url, { streams, perStream, connections = 8 }) {
  const target = new URL(url);
  const jobs = [];
  for (let s = 0; s < streams; s++) {
    const source = `/bench/b-${String(s).padStart(3, '0')}`;
    if (perStream === 0) jobs.push([`/v1/streams${source}`, { type: 'bench/created', payload: {} }]);
    for (let k = 0; k < perStream; k++) {
      jobs.push([
        `/v1/streams/bench/sink-${s}-${k}:subscribeToEventsFrom`,
        { sourceStreamPath: source, subscriptionKey: `never-${k}`, filter: { eventTypes: [NEVER_TYPE] }, delivery: { start: 'now' } },
      ]);
    }
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      const conn = new RawConnection(target.hostname, Number(target.port));
      try {
        for (let j = next++; j < jobs.length; j = next++) {
          const [path, body] = jobs[j];
          const { status, text } = await conn.request('POST', path, Buffer.from(JSON.stringify(body)));
          if (status !== 200) throw new Error(`${path} answered ${status}: ${text.slice(0, 300)}`);
        }
      } finally {
        conn.close();
      }
    }),
  );
}
