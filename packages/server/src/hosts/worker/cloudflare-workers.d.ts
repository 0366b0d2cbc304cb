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
    readonly storage: import('../../adapters/durable-object/do-api.js').DoStorageApi;
    waitUntil(promise: Promise<unknown>): void;
    blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
  }

  /**
   * A class whose instances cross Workers RPC by reference: the receiver gets a stub whose method
   * calls come back here; `[Symbol.dispose]` runs once every stub of it is released (or its
   * caller's side of the connection broke).
   */
  export abstract class RpcTarget {}

  export abstract class DurableObject<Env = unknown> {
    protected readonly ctx: DurableObjectState;
    protected readonly env: Env;
    constructor(ctx: DurableObjectState, env: Env);
  }
}
