/**
 * A modal confirmation dialog (the native <dialog>, keyboard reachable): nothing happens until
 * its confirm button is pressed; a failed action keeps it open with the error shown.
 */
import { errorBox } from './common.js';
import { h, mount, type Child } from './dom.js';

export interface DialogOptions {
  title: string;
  body: Child[];
  confirm: string;
  /** Focused when the dialog opens (default: the confirm button). */
  focus?: HTMLElement;
  /** A wide dialog (a form with a preview beside it). */
  wide?: boolean;
  /** The action; a thrown error is shown in the dialog, which stays open. */
  run(): Promise<void>;
}

/** Opens the dialog; one at a time. */
export function openDialog(options: DialogOptions): void {
  // One question at a time (a double click must not stack two dialogs).
  if (document.querySelector('dialog[open]')) return;
  const problem = h('div');
  const confirm = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'dialog-confirm' }, options.confirm);
  const cancel = h('button', { type: 'button', class: 'btn', onclick: () => dialog.close() }, 'Cancel');
  const form = h(
    'form',
    {
      method: 'dialog',
      onsubmit: (e) => {
        e.preventDefault();
        confirm.disabled = true;
        mount(problem);
        options
          .run()
          .then(() => dialog.close())
          .catch((error: unknown) => mount(problem, errorBox(error, 'dialog-error')))
          .finally(() => {
            confirm.disabled = false;
          });
      },
    },
    h('h2', { id: 'dialog-title' }, options.title),
    options.body,
    problem,
    h('div', { class: 'dialog-actions' }, cancel, confirm),
  );
  const dialog = h('dialog', { class: options.wide ? 'confirm wide' : 'confirm', 'aria-labelledby': 'dialog-title' }, form);
  dialog.addEventListener('close', () => dialog.remove());
  document.body.appendChild(dialog);
  dialog.showModal();
  (options.focus ?? confirm).focus();
}
