/**
 * The composer: appends one event (type, payload JSON, idempotency key, ephemeral) with
 * client.append. A rejection shows the server's RivuletError inline, code and message; a payload
 * that is not a JSON object is caught before any request.
 */
import type { AppendEvent, CommittedEvent, RivuletClient } from '@rivulet/client';
import { errorBox } from '../common.js';
import { h, mount } from '../dom.js';
import { parsePayload } from '../format.js';

export interface ComposerHooks {
  onAppended(event: CommittedEvent): void;
}

export class Composer {
  readonly element: HTMLElement;
  private readonly type: HTMLInputElement;
  private readonly payload: HTMLTextAreaElement;
  private readonly idempotencyKey: HTMLInputElement;
  private readonly ephemeral: HTMLInputElement;
  private readonly submit: HTMLButtonElement;
  private readonly result: HTMLElement;

  constructor(
    private readonly client: RivuletClient,
    private readonly path: string,
    private readonly hooks: ComposerHooks,
  ) {
    this.type = h('input', { id: 'composer-type', name: 'type', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'shop.example/order-created', maxlength: 512 });
    this.payload = h('textarea', { id: 'composer-payload', name: 'payload', rows: 4, spellcheck: 'false', placeholder: '{"id": 7}' });
    this.idempotencyKey = h('input', { id: 'composer-key', name: 'idempotencyKey', autocomplete: 'off', spellcheck: 'false', placeholder: 'optional, e.g. order-7' });
    this.ephemeral = h('input', { id: 'composer-ephemeral', name: 'ephemeral', type: 'checkbox' });
    this.submit = h('button', { type: 'submit', class: 'btn btn-primary' }, 'Append');
    this.result = h('div', { class: 'composer-result', 'data-testid': 'composer-result', 'aria-live': 'polite' });
    const form = h(
      'form',
      { class: 'composer', 'aria-label': `Append an event to ${path}`, onsubmit: (e) => void this.send(e) },
      h('div', { class: 'field' }, h('label', { for: 'composer-type' }, 'Type'), this.type),
      h('div', { class: 'field' }, h('label', { for: 'composer-payload' }, 'Payload ', h('span', { class: 'muted' }, '(JSON object, optional)')), this.payload),
      h('div', { class: 'field' }, h('label', { for: 'composer-key' }, 'Idempotency key'), this.idempotencyKey),
      h(
        'div',
        { class: 'composer-actions' },
        h('label', { class: 'check' }, this.ephemeral, ' ephemeral'),
        this.submit,
      ),
      this.result,
    );
    this.element = h('section', { class: 'panel', 'aria-labelledby': 'composer-title' }, h('div', { class: 'panel-head' }, h('h2', { id: 'composer-title' }, 'Append')), form);
  }

  private async send(e: Event): Promise<void> {
    e.preventDefault();
    const payload = parsePayload(this.payload.value);
    if (!payload.ok) {
      mount(this.result, h('div', { class: 'error-box', role: 'alert', 'data-testid': 'composer-error' }, payload.error));
      this.payload.focus();
      return;
    }
    const event: AppendEvent = { type: this.type.value.trim() };
    if (payload.value) event.payload = payload.value as NonNullable<AppendEvent['payload']>;
    const key = this.idempotencyKey.value.trim();
    if (key !== '') event.idempotencyKey = key;
    if (this.ephemeral.checked) event.ephemeral = true;
    this.submit.disabled = true;
    mount(this.result, h('span', { class: 'muted' }, 'Appending…'));
    try {
      const [committed] = await this.client.append(this.path, event);
      if (!committed) throw new Error('the server answered no event');
      mount(
        this.result,
        h('p', { class: 'ok', role: 'status', 'data-testid': 'composer-ok' }, `Appended at offset ${committed.offset}`, committed.ephemeral ? ' (ephemeral)' : '', '.'),
      );
      this.hooks.onAppended(committed);
    } catch (error) {
      mount(this.result, errorBox(error, 'composer-error'));
    } finally {
      this.submit.disabled = false;
    }
  }
}
