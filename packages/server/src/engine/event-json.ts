/**
 * The JSON text of a committed event. The actor keeps the text each fresh event was stored as, so
 * that answering an append or a live reader does not serialise the event a second time; events
 * read back or repeated are serialised on demand.
 */
import type { CommittedEvent } from '@rivulet/contract';

const texts = new WeakMap<CommittedEvent, string>();

export function rememberJson(event: CommittedEvent, json: string): void {
  texts.set(event, json);
}

export function committedJson(event: CommittedEvent): string {
  return texts.get(event) ?? JSON.stringify(event);
}
