/** The names of the port conformance runs inside workerd, shared by the Worker (ports-worker.ts) and the vitest file (ports.test.ts). */
export const FETCH_OUTBOUND_SUITE = 'fetchOutbound (hosts/worker/outbound.ts) inside workerd';
export const DO_ALARM_SUITE = 'DurableObjectAlarms (workerd via Miniflare)';
/** The Durable Object alarm's scheduling is the runtime's: a fire may come a little later than a Node timer's. */
export const DO_ALARM_TOLERANCE = { earlyMs: 5, lateMs: 500 };
