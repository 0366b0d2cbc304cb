/** A promise with its settle functions, for a group's `flush()` (sqlite-storage.ts). */
export interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export function deferred(): Deferred {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A group nobody awaits must not surface as an unhandled rejection; awaiters still see it.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}
