/**
 * The sync that makes committed groups durable, off the event loop (decision 010).
 *
 * A group's COMMIT runs on the event loop; the fdatasync of the WAL that makes it durable runs on
 * libuv's thread pool. A group resolves only once a sync that STARTED AFTER its COMMIT has ended
 * (a sync already running when it committed may have passed its frames). At most one sync runs:
 * groups that commit meanwhile wait, and the next sync, started when the running one ends, covers
 * all of them, so under load one sync serves more groups while the loop goes on reading requests.
 *
 * Groups resolve in commit order. A group with no durable write (`{durable: false}`) needs no sync
 * but does not overtake an earlier group still waiting for one: it resolves with or after it.
 *
 * A failed sync is final: the kernel may have dropped the dirty pages it could not write, so a
 * later sync that succeeds proves nothing about them. Every group it covered and every group after
 * it is rejected with the same error, and `failure` stays set (the storage then refuses all work).
 */

export interface PendingGroup {
  readonly durable: boolean;
  resolve(): void;
  reject(error: unknown): void;
}

export interface DurableSyncDeps<G extends PendingGroup> {
  /** Starts a sync on the thread pool; answers false (never calling `done`) when there is nothing to sync. */
  start(done: (error: Error | null) => void): boolean;
  /** Syncs on the calling thread (close); throws on failure. */
  syncNow(): void;
  /** Milliseconds, monotonic. */
  now(): number;
  /** A sync ended well: the groups it made durable, in commit order, and how long it took. */
  synced(groups: readonly G[], seconds: number): void;
  /** The first failed sync: told once, before any group is rejected; answers the error to reject them with. */
  failed(error: Error): Error;
}

export class DurableSync<G extends PendingGroup = PendingGroup> {
  /** The groups the running sync covers; null while none runs. */
  private covered: G[] | null = null;
  /** Committed groups waiting for the next sync. */
  private waiting: G[] = [];
  private failureError: Error | null = null;
  /** Syncs started (observable by tests and diagnostics). */
  started = 0;

  constructor(private readonly deps: DurableSyncDeps<G>) {}

  /** The error of the failed sync; null while every sync succeeded. */
  get failure(): Error | null {
    return this.failureError;
  }

  /** Some committed group is not resolved yet. */
  get pending(): boolean {
    return this.covered !== null || this.waiting.length > 0;
  }

  /** A group has just committed. */
  committed(group: G): void {
    if (this.failureError) {
      group.reject(this.failureError);
      return;
    }
    if (!this.pending && !group.durable) {
      group.resolve();
      return;
    }
    this.waiting.push(group);
    if (this.covered === null) this.next();
  }

  /** Starts the sync of every waiting group (one with a durable write among them), or resolves them. */
  private next(): void {
    const batch = this.waiting;
    this.waiting = [];
    if (batch.length === 0) return;
    if (!batch.some((g) => g.durable)) {
      for (const g of batch) g.resolve();
      return;
    }
    const startedAt = this.deps.now();
    this.covered = batch;
    this.started++;
    const running = this.deps.start((error) => this.ended(batch, startedAt, error));
    if (!running) {
      // No WAL file to sync (an in-memory database, say): committed is all there is.
      this.covered = null;
      for (const g of batch) g.resolve();
    }
  }

  private ended(batch: G[], startedAt: number, error: Error | null): void {
    // close() synced these groups already and settled them.
    if (this.covered !== batch) return;
    this.covered = null;
    if (error) {
      this.fail(error, batch);
      return;
    }
    this.done(batch, (this.deps.now() - startedAt) / 1000);
    this.next();
  }

  private done(batch: G[], seconds: number): void {
    try {
      this.deps.synced(batch, seconds);
    } catch {
      // An observer's fault must not keep durable groups waiting.
    }
    for (const g of batch) g.resolve();
  }

  private fail(error: Error, batch: G[]): void {
    const all = [...batch, ...this.waiting];
    this.waiting = [];
    const reason = this.deps.failed(error);
    this.failureError = reason;
    for (const g of all) g.reject(reason);
  }

  /**
   * Makes every committed group durable now, on the calling thread, and settles them (close, and
   * commits without group commit). A sync still running on the thread pool is left to end; its
   * outcome no longer matters, since this sync started after every COMMIT.
   */
  drainNow(): void {
    if (this.failureError || !this.pending) return;
    const batch = [...(this.covered ?? []), ...this.waiting];
    this.covered = null;
    this.waiting = [];
    if (!batch.some((g) => g.durable)) {
      for (const g of batch) g.resolve();
      return;
    }
    const startedAt = this.deps.now();
    this.started++;
    try {
      this.deps.syncNow();
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)), batch);
      return;
    }
    this.done(batch, (this.deps.now() - startedAt) / 1000);
  }
}
