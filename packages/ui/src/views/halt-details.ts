/**
 * What a halted subscription's card shows below its facts: the event it failed on (type, offset,
 * a payload excerpt) and its newest delivery attempts (protocol §22), read once per halt.
 */
import type { CommittedEvent, DeliveryAttempt, RivuletClient } from '@rivulet/client';
import { errorBox } from '../common.js';
import { h, mount } from '../dom.js';
import { failedOffset, formatClock, jsonPreview } from '../format.js';

export interface HaltFacts {
  afterOffset: number;
  error?: string | undefined;
}

/** How many attempts a card lists (newest first). */
const ATTEMPTS_SHOWN = 8;

export function haltDetails(client: RivuletClient, sourcePath: string, key: string, halt: HaltFacts, eventTypes: readonly string[] | undefined): HTMLElement {
  const failed = h('div', { class: 'failed-event', 'data-testid': 'failed-event' }, h('span', { class: 'muted small' }, 'Reading the failed event…'));
  const attempts = h('div', { class: 'attempts', 'data-testid': 'attempts' });
  void load(client, sourcePath, key, halt, eventTypes, failed, attempts);
  return h('div', { class: 'halt-details' }, failed, attempts);
}

async function load(
  client: RivuletClient,
  sourcePath: string,
  key: string,
  halt: HaltFacts,
  eventTypes: readonly string[] | undefined,
  failedBox: HTMLElement,
  attemptsBox: HTMLElement,
): Promise<void> {
  let history: DeliveryAttempt[] = [];
  try {
    history = (await client.deliveryAttempts(sourcePath, key, { limit: ATTEMPTS_SHOWN })).attempts;
    mount(attemptsBox, attemptsTable(history));
  } catch (error) {
    mount(attemptsBox, errorBox(error, 'attempts-error'));
  }
  try {
    const at = failedOffset(halt, history);
    const page =
      at === null
        ? await client.getEvents(sourcePath, { afterOffset: halt.afterOffset, limit: 1, ...(eventTypes ? { eventTypes: [...eventTypes] } : {}) })
        : await client.getEvents(sourcePath, { afterOffset: at.offset - 1, limit: 1 });
    const event = page.events[0];
    const label = at === null ? 'Next event it owes: ' : at.source === 'error' ? 'Failed on ' : 'Failed delivering the events from ';
    mount(failedBox, event ? failedEvent(label, event) : h('span', { class: 'muted small' }, `No event after offset ${halt.afterOffset} is left to show.`));
  } catch (error) {
    mount(failedBox, errorBox(error, 'failed-event-error'));
  }
}

function failedEvent(label: string, event: CommittedEvent): HTMLElement {
  return h(
    'div',
    null,
    h(
      'div',
      { class: 'small', 'data-testid': 'failed-label' },
      label,
      h('strong', { 'data-testid': 'failed-offset' }, `#${event.offset}`),
      ' ',
      h('code', { 'data-testid': 'failed-type' }, event.type),
    ),
    h('pre', { class: 'payload-excerpt', 'data-testid': 'failed-payload', title: JSON.stringify(event.payload ?? null, null, 2) }, jsonPreview(event.payload ?? null, 240)),
  );
}

function attemptsTable(attempts: readonly DeliveryAttempt[]): HTMLElement {
  if (attempts.length === 0) return h('p', { class: 'muted small' }, 'No delivery attempts recorded.');
  return h(
    'details',
    { class: 'attempts-details', open: true },
    h('summary', { class: 'small' }, `Last ${attempts.length} attempt${attempts.length === 1 ? '' : 's'}`),
    h(
      'table',
      { class: 'grid attempts-table', 'data-testid': 'attempts-table' },
      h('thead', null, h('tr', null, ['At', '#', 'Offsets', 'Outcome', 'HTTP', 'ms', 'Error'].map((t) => h('th', { scope: 'col' }, t)))),
      h(
        'tbody',
        null,
        attempts.map((a) =>
          h(
            'tr',
            { 'data-outcome': a.outcome },
            h('td', null, h('time', { datetime: a.at, title: a.at }, formatClock(a.at))),
            h('td', { class: 'num' }, String(a.attempt)),
            h('td', { class: 'num' }, a.fromOffset === a.toOffset ? String(a.fromOffset) : `${a.fromOffset}–${a.toOffset}`),
            h('td', null, h('span', { class: `badge badge-outcome-${a.outcome}` }, a.outcome)),
            h('td', { class: 'num', title: a.responseExcerpt }, a.status === undefined ? '' : String(a.status)),
            h('td', { class: 'num' }, String(a.durationMs)),
            h('td', { class: 'clip', title: a.error ?? a.responseExcerpt ?? '' }, a.error ?? a.responseExcerpt ?? ''),
          ),
        ),
      ),
    ),
  );
}
