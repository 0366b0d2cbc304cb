/**
 * What ends with an RPC session (protocol §18.2, §19.4): live connections and pending waits
 * register here, and the session's close runs them. Host-agnostic; one instance per server, in the
 * ITX deps.
 */
export class SessionClosers {
  private readonly bySession = new Map<string, Set<() => void>>();

  /** Runs `fn` when the session ends; answers a function that forgets it again. */
  onClose(sessionId: string, fn: () => void): () => void {
    let set = this.bySession.get(sessionId);
    if (!set) {
      set = new Set();
      this.bySession.set(sessionId, set);
    }
    const entry = () => fn();
    set.add(entry);
    return () => {
      const current = this.bySession.get(sessionId);
      if (!current) return;
      current.delete(entry);
      if (current.size === 0) this.bySession.delete(sessionId);
    };
  }

  /** The session ended: runs (and forgets) everything registered for it. */
  end(sessionId: string): void {
    const set = this.bySession.get(sessionId);
    if (!set) return;
    this.bySession.delete(sessionId);
    for (const fn of set) {
      try {
        fn();
      } catch {
        // One closer failing must not keep the others from running.
      }
    }
  }

  /** Sessions with something registered (tests). */
  get size(): number {
    return this.bySession.size;
  }
}
