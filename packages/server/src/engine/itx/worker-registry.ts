/**
 * Named callables registered by programs connected over RPC (protocol §18.2 `workers.register`),
 * reachable from itx-call expressions of the same project while their session lasts. A name is
 * per project; registering it again replaces the previous registration (whose holder is told by
 * its handle being inert); a session's registrations end with the session. The registry holds
 * one duplicate of each registered stub and disposes it when the registration ends, so nothing
 * leaks across connect/disconnect cycles.
 */

/** What the registry needs of an RPC stub: duplication and disposal (capnweb's RpcStub). */
export interface HeldStub {
  dup(): HeldStub;
  [Symbol.dispose](): void;
}

interface Registration {
  id: number;
  sessionId: string;
  stub: HeldStub;
}

export class CallableRegistry {
  private readonly byProject = new Map<string, Map<string, Registration>>();
  private readonly bySession = new Map<string, Set<{ projectKey: string; name: string; id: number }>>();
  private nextId = 1;
  private readonly registeredListeners = new Set<(projectId: string | null, name: string) => void>();

  constructor(readonly kind: 'worker' | 'processor') {}

  /** Calls `listener` after every registration (processor hosts: wake what waits for one). */
  onRegistered(listener: (projectId: string | null, name: string) => void): () => void {
    this.registeredListeners.add(listener);
    return () => this.registeredListeners.delete(listener);
  }

  private static projectKey(projectId: string | null): string {
    return projectId ?? '';
  }

  /** Registers `stub` (the registry keeps its own duplicate); answers a function that unregisters it. */
  register(projectId: string | null, name: string, stub: HeldStub, sessionId: string): () => boolean {
    const projectKey = CallableRegistry.projectKey(projectId);
    let names = this.byProject.get(projectKey);
    if (!names) {
      names = new Map();
      this.byProject.set(projectKey, names);
    }
    const previous = names.get(name);
    if (previous) {
      this.drop(projectKey, name, previous);
      // Dropping the project's last name removed its map; put one back for the new registration.
      names = this.byProject.get(projectKey) ?? new Map();
      this.byProject.set(projectKey, names);
    }
    const registration: Registration = { id: this.nextId++, sessionId, stub: stub.dup() };
    names.set(name, registration);
    let forSession = this.bySession.get(sessionId);
    if (!forSession) {
      forSession = new Set();
      this.bySession.set(sessionId, forSession);
    }
    forSession.add({ projectKey, name, id: registration.id });
    for (const listener of this.registeredListeners) {
      try {
        listener(projectId, name);
      } catch {
        // A listener's failure is not the registration's.
      }
    }
    return () => {
      const current = this.byProject.get(projectKey)?.get(name);
      if (!current || current.id !== registration.id) return false;
      this.drop(projectKey, name, current);
      return true;
    };
  }

  /** A duplicate of the registered stub (the caller disposes it), or undefined when none is connected. */
  get(projectId: string | null, name: string): HeldStub | undefined {
    return this.byProject.get(CallableRegistry.projectKey(projectId))?.get(name)?.stub.dup();
  }

  has(projectId: string | null, name: string): boolean {
    return this.byProject.get(CallableRegistry.projectKey(projectId))?.has(name) ?? false;
  }

  /** Ends every registration of a session (it closed). */
  endSession(sessionId: string): void {
    const entries = this.bySession.get(sessionId);
    if (!entries) return;
    this.bySession.delete(sessionId);
    for (const { projectKey, name, id } of entries) {
      const current = this.byProject.get(projectKey)?.get(name);
      if (current && current.id === id) this.drop(projectKey, name, current);
    }
  }

  /** Registrations currently held (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const names of this.byProject.values()) n += names.size;
    return n;
  }

  private drop(projectKey: string, name: string, registration: Registration): void {
    const names = this.byProject.get(projectKey);
    names?.delete(name);
    if (names && names.size === 0) this.byProject.delete(projectKey);
    const forSession = this.bySession.get(registration.sessionId);
    if (forSession) {
      for (const entry of forSession) if (entry.id === registration.id) forSession.delete(entry);
      if (forSession.size === 0) this.bySession.delete(registration.sessionId);
    }
    try {
      registration.stub[Symbol.dispose]();
    } catch {
      // A stub whose session already broke has nothing left to release.
    }
  }
}
