/**
 * The hub's side of rivulet_rpc_sessions on the Worker host (docs/cloudflare.md §4.2): a project's
 * RPC sessions live in its hub object's memory and end with it, so the hub tells its project's
 * index its count of open sessions every interval while any is open, and 0 once when the last one
 * closed. The index sums the counts it heard recently (metrics-rollup.ts, CONNECTIONS_FRESH_MS):
 * a hub that went away stops being counted within a few seconds, as a stream object's connections do.
 * Each hub instance reports under its own id, so a new instance never takes an old one's count.
 */
import type { CancelTimer, Timer } from '../../ports/timer.js';
import { METRICS_REPORT_INTERVAL_MS } from './metrics-rollup.js';

export interface SessionsReporterPorts {
  timer: Timer;
  intervalMs?: number;
  /** Open sessions now. */
  sessions(): number;
  send(reporter: string, count: number): Promise<void>;
  log(message: string, error: unknown): void;
}

export class SessionsReporter {
  private readonly reporter = crypto.randomUUID();
  private armed: CancelTimer | null = null;
  private sent = 0;
  private sending = false;

  constructor(private readonly ports: SessionsReporterPorts) {}

  /** The count changed: report within an interval. */
  poke(): void {
    if (this.armed || this.sending) return;
    this.armed = this.ports.timer.set(this.ports.intervalMs ?? METRICS_REPORT_INTERVAL_MS, () => {
      this.armed = null;
      void this.report();
    });
  }

  private async report(): Promise<void> {
    const count = this.ports.sessions();
    // Open sessions are told every interval (the index drops a count it stops hearing); 0 once.
    if (count === 0 && this.sent === 0) return;
    this.sending = true;
    try {
      await this.ports.send(this.reporter, count);
      this.sent = count;
    } catch (error) {
      this.ports.log('could not report RPC sessions to the project index (sent again within an interval)', error);
    } finally {
      this.sending = false;
    }
    if (this.ports.sessions() > 0 || this.sent !== 0) this.poke();
  }
}
