/**
 * The few declarations of the `cloudflare:workers` module the Worker host uses, written locally:
 * `@cloudflare/workers-types` declares the whole Workers runtime as globals, which would clash with
 * the Node and DOM types the rest of the project is checked against. Shapes follow
 * developers.cloudflare.com (Durable Object base class, DurableObjectState).
 */
declare module 'cloudflare:workers' {
  export interface DurableObjectId {
    toString(): string;
  }

  export interface DurableObjectState {
    readonly id: DurableObjectId;
    readonly storage: import('../adapters/durable-object/do-api.js').DoStorageApi;
    waitUntil(promise: Promise<unknown>): void;
    blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
  }

  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
