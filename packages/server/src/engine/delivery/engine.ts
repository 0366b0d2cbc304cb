/**
 * The delivery engine of one host: a sender per source stream that has subscriptions, created on
 * first poke. Hosts poke it after every commit (the actor's afterCommit hook) and at start for every
 * stream with subscription rows, so owed work survives a restart without any new append
 * (protocol §12.2).
 */
import type { CommittedEvent } from '@rivulet/contract';
import type { StreamActor } from '../actor.js';
import { StreamSender, type SenderDeps } from './sender.js';

export class DeliveryEngine {
  private readonly senders = new Map<StreamActor, StreamSender>();
  private closed = false;

  constructor(private readonly deps: SenderDeps) {}

  sender(actor: StreamActor): StreamSender {
    let sender = this.senders.get(actor);
    if (!sender) {
      sender = new StreamSender(actor, this.deps);
      this.senders.set(actor, sender);
    }
    return sender;
  }

  /**
   * A send check soon; cheap when the stream has no subscriptions. With the events just committed,
   * subscriptions that were caught up and whose event types match none of them simply move past
   * them, and no check is scheduled for them at all.
   */
  poke(actor: StreamActor, committed?: readonly CommittedEvent[]): void {
    const sender = this.senderIfOwed(actor);
    if (!sender) return;
    if (committed && sender.passOver(committed)) sender.letWrittenGo();
    else sender.poke();
  }

  /** Events were written, not yet durable: copies that go with them start now (StreamSender.written). */
  written(actor: StreamActor, events: readonly { readonly event: CommittedEvent }[]): void {
    this.senderIfOwed(actor)?.written(events);
  }

  /** The stream's sender, unless the engine is closed or the stream has no sender and no subscriptions. */
  private senderIfOwed(actor: StreamActor): StreamSender | undefined {
    if (this.closed || (!this.senders.has(actor) && actor.subscriptions.size === 0)) return undefined;
    return this.sender(actor);
  }

  /** The actor left memory: drop its sender (it has no subscriptions and nothing in flight). */
  forget(actor: StreamActor): void {
    this.senders.get(actor)?.close();
    this.senders.delete(actor);
  }

  /** A processor host registered in `projectId`: its streams' processor-wake rows waiting for a host are due now. */
  processorHostRegistered(projectId: string | null): void {
    if (this.closed) return;
    for (const sender of this.senders.values()) if (sender.actor.projectId === projectId) sender.processorHostRegistered();
  }

  isBusy(actor: StreamActor): boolean {
    return this.senders.get(actor)?.busy ?? false;
  }

  close(): void {
    this.closed = true;
    for (const sender of this.senders.values()) sender.close();
    this.senders.clear();
  }
}
