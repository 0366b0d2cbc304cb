/**
 * The subscription form (a dialog): create or edit a subscription on its source stream by
 * appending `subscription-configured` (protocol §9.1), with the dry run (`:previewSubscription`,
 * protocol §23) shown beside it as the user types, debounced; and the removal, confirmed first.
 * The server's answer to a bad filter or transform shows inline, code and message.
 */
import type { CommittedEvent, PreviewSubscriptionResponse, RivuletClient } from '@rivulet/client';
import { errorBox } from '../common.js';
import { openDialog } from '../dialog.js';
import { h, mount } from '../dom.js';
import { jsonPreview, type SubscriptionConfiguration } from '../format.js';
import { EMPTY_FIELDS, FORM_ACTIONS, buildPayload, fieldsFrom, type FormAction, type SubscriptionFields } from '../subscription-form.js';

export type Done = (text: string, event: CommittedEvent) => void;

/** The wait after the last keystroke before the dry run is asked. */
export const PREVIEW_DEBOUNCE_MS = 300;
/** How many recent events the dry run scans, and how many of its deliveries the form lists. */
const PREVIEW_LIMIT = 50;
const PREVIEW_SHOWN = 5;

const ACTION_TEXT: Record<FormAction, string> = {
  'copy-to-stream': 'copy to a stream',
  'webhook-post': 'webhook POST',
  'itx-call': 'ITX call',
  'processor-wake': 'wake a processor',
};

export interface FormTarget {
  /** The source stream; asked for when absent. */
  sourcePath?: string;
  /** Editing: the key and its current configuration. */
  key?: string;
  configuration?: SubscriptionConfiguration;
}

export function openSubscriptionForm(client: RivuletClient, target: FormTarget, done: Done): void {
  const editing = target.key !== undefined && target.configuration !== undefined;
  const initial = editing ? fieldsFrom(target.key!, target.configuration!) : EMPTY_FIELDS;
  const input = (id: string, value: string, attrs: Record<string, string | boolean> = {}) =>
    h('input', { id, value, autocomplete: 'off', spellcheck: 'false', ...attrs });
  const area = (id: string, value: string, placeholder: string) => h('textarea', { id, rows: 2, spellcheck: 'false', placeholder, value });
  const select = (id: string, options: readonly [string, string][], value: string) =>
    h('select', { id }, options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));

  const source = input('sf-source', target.sourcePath ?? '', { placeholder: '/shop/orders', required: true, readonly: target.sourcePath !== undefined });
  const key = input('sf-key', initial.subscriptionKey, { placeholder: 'paid-orders', required: true, readonly: editing });
  const description = input('sf-description', initial.description, { placeholder: 'optional' });
  const action = select('sf-action', FORM_ACTIONS.map((a) => [a, ACTION_TEXT[a]]), initial.action);
  const targetInput = input('sf-target', initial.target);
  const targetLabel = h('label', { for: 'sf-target' });
  const expression = input('sf-expression', initial.expression, { placeholder: '["workers", ["get", "billing"], "processEventBatch"]' });
  const eventTypes = input('sf-types', initial.eventTypes, { placeholder: 'shop.example/order-paid, … (empty: every type)' });
  const condition = area('sf-condition', initial.jsonataCondition, 'payload.total > 100');
  const transform = area('sf-transform', initial.jsonataTransform, '{"type": type, "payload": {"id": payload.id}}');
  const start = select('sf-start', [['beginning', 'from the beginning'], ['now', 'from now on']], initial.start);
  const onFailing = select('sf-failing', [['halt', 'halt'], ['skip', 'skip it']], initial.onFailingEvent);
  const preview = h('div', { class: 'preview-body', 'data-testid': 'preview', 'aria-live': 'polite' });

  const field = (label: HTMLElement | string, control: HTMLElement, id: string, extra?: string) =>
    h('div', { class: 'field', 'data-field': id }, typeof label === 'string' ? h('label', { for: control.id }, label, extra ? h('span', { class: 'muted' }, ` ${extra}`) : null) : label, control);
  const targetField = field(targetLabel, targetInput, 'target');
  const expressionField = field('ITX expression', expression, 'expression', '(JSON)');
  const transformField = field('Transform', transform, 'transform', '(JSONata, optional)');
  const startField = field('Start', start, 'start');
  const failingField = field('On a failing event', onFailing, 'failing');

  const fields = (): SubscriptionFields => ({
    subscriptionKey: key.value,
    description: description.value,
    action: action.value as FormAction,
    target: targetInput.value,
    expression: expression.value,
    eventTypes: eventTypes.value,
    jsonataCondition: condition.value,
    jsonataTransform: transform.value,
    start: start.value as SubscriptionFields['start'],
    onFailingEvent: onFailing.value as SubscriptionFields['onFailingEvent'],
  });

  // Which fields the chosen action has (protocol §9.1: a copy never skips; a processor has no transform or start).
  const shape = () => {
    const a = action.value as FormAction;
    targetField.hidden = a === 'itx-call' || a === 'processor-wake';
    expressionField.hidden = !targetField.hidden;
    transformField.hidden = a === 'processor-wake';
    startField.hidden = a === 'processor-wake';
    failingField.hidden = a === 'processor-wake' || a === 'copy-to-stream';
    targetLabel.textContent = a === 'webhook-post' ? 'Webhook URL' : 'Receiving stream';
    targetInput.placeholder = a === 'webhook-post' ? 'https://example.com/hooks/orders' : '/shop/paid';
  };
  shape();

  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: AbortController | undefined;
  const runPreview = async () => {
    inFlight?.abort();
    const controller = new AbortController();
    inFlight = controller;
    const path = source.value.trim();
    const built = buildPayload(fields());
    if (path === '') return mount(preview, h('p', { class: 'muted small' }, 'Name the source stream to see what it would deliver.'));
    if (!built.ok) return mount(preview, h('p', { class: 'muted small', 'data-testid': 'preview-incomplete' }, `Not yet: ${built.error}.`));
    preview.dataset.state = 'loading';
    try {
      const answer = await client.previewSubscription(path, { ...built.payload, limit: PREVIEW_LIMIT } as Parameters<RivuletClient['previewSubscription']>[1], {
        signal: controller.signal,
      });
      if (controller.signal.aborted) return;
      mount(preview, previewView(answer));
    } catch (error) {
      if (controller.signal.aborted) return;
      mount(preview, errorBox(error, 'preview-error'));
    } finally {
      if (inFlight === controller) preview.dataset.state = 'done';
    }
  };
  const schedule = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void runPreview(), PREVIEW_DEBOUNCE_MS);
  };

  const form = h(
    'div',
    { class: 'sub-form', oninput: () => schedule(), onchange: () => (shape(), schedule()) },
    h(
      'div',
      { class: 'sub-form-fields' },
      field('Source stream', source, 'source'),
      field('Key', key, 'key'),
      field('Description', description, 'description', '(optional)'),
      field('Action', action, 'action'),
      targetField,
      expressionField,
      field('Event types', eventTypes, 'types', '(comma list)'),
      field('Condition', condition, 'condition', '(JSONata, optional)'),
      transformField,
      h('div', { class: 'field-pair' }, startField, failingField),
    ),
    h('section', { class: 'sub-form-preview', 'aria-labelledby': 'preview-title' }, h('h3', { id: 'preview-title' }, 'Dry run on recent events'), preview),
  );

  openDialog({
    title: editing ? `Edit “${target.key}”` : 'New subscription',
    body: [form],
    confirm: editing ? 'Save' : 'Create',
    wide: true,
    focus: target.sourcePath === undefined ? source : editing ? description : key,
    run: async () => {
      const path = source.value.trim();
      const built = buildPayload(fields());
      if (path === '') throw new Error('a source stream is needed');
      if (!built.ok) throw new Error(built.error);
      const [event] = await client.append(path, { type: 'events.iterate.com/stream/subscription-configured', payload: built.payload as never });
      if (!event) throw new Error('the server answered no event');
      clearTimeout(timer);
      inFlight?.abort();
      done(`${editing ? 'Saved' : 'Created'} “${String(built.payload.subscriptionKey)}” on ${path}.`, event);
    },
  });
  void runPreview();
}

function previewView(answer: PreviewSubscriptionResponse): HTMLElement {
  return h(
    'div',
    null,
    h('p', { class: 'small', 'data-testid': 'preview-summary' }, `${answer.matched} of ${answer.scanned} recent events match; ${answer.deliveries.length} would be delivered, ${answer.errors.length} would fail.`),
    answer.errors.length > 0
      ? h(
          'ul',
          { class: 'preview-errors', 'data-testid': 'preview-errors' },
          answer.errors.slice(0, PREVIEW_SHOWN).map((e) => h('li', { class: 'clip', title: e.error }, h('strong', null, `#${e.offset} `), e.error)),
        )
      : null,
    answer.deliveries.length > 0
      ? h(
          'ul',
          { class: 'preview-deliveries', 'data-testid': 'preview-deliveries' },
          answer.deliveries.slice(-PREVIEW_SHOWN).map((d) => deliveryView(d.offset, d.event)),
        )
      : null,
  );
}

/** One delivery of the dry run: its type and payload at a glance, the whole event on click. */
function deliveryView(offset: number, event: unknown): HTMLElement {
  const shaped = typeof event === 'object' && event !== null ? (event as { type?: unknown; payload?: unknown }) : {};
  return h(
    'li',
    { 'data-offset': offset },
    h(
      'details',
      null,
      h(
        'summary',
        null,
        h('strong', null, `#${offset} `),
        typeof shaped.type === 'string' ? h('code', { class: 'event-type' }, shaped.type) : null,
        ' ',
        h('code', { class: 'muted', 'data-testid': 'preview-payload' }, jsonPreview(shaped.payload ?? null, 120)),
      ),
      h('pre', { class: 'json small' }, JSON.stringify(event, null, 2)),
    ),
  );
}

/** Removing a subscription appends `subscription-removed` on its source (protocol §9.4), after a confirmation. */
export function confirmRemove(client: RivuletClient, sourcePath: string, key: string, done: Done): void {
  openDialog({
    title: `Remove “${key}”?`,
    body: [h('p', null, `Delivery from ${sourcePath} stops for good; events it already delivered stay where they are. Configuring the key again starts a new run.`)],
    confirm: 'Remove',
    run: async () => {
      const [event] = await client.append(sourcePath, { type: 'events.iterate.com/stream/subscription-removed', payload: { subscriptionKey: key, reason: 'requested' } });
      if (!event) throw new Error('the server answered no event');
      done(`Removed “${key}” from ${sourcePath}.`, event);
    },
  });
}
