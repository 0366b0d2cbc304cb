/** The name the Durable Object adapter's conformance run carries, shared by the Worker and the vitest file. */
export const DO_SUITE_NAME = 'DurableObjectStorage (workerd via Miniflare)';
