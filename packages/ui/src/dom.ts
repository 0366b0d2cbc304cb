/**
 * The UI's whole "framework": `h()` builds an element from a tag, attributes and children. Views
 * are plain functions and small classes that build DOM once and update the parts that change, so
 * focus, scroll position and expanded rows survive a refresh.
 */

export type Child = Node | string | number | null | undefined | false | readonly Child[];

type Handler = (event: Event) => void;

/** Attributes: strings and numbers are set as attributes, `true` as an empty one, false/null/undefined skipped; `on<event>` adds a listener. */
export type Attrs = Record<string, string | number | boolean | null | undefined | Handler>;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  if (attrs) {
    for (const [name, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (typeof value === 'function') {
        element.addEventListener(name.slice(2).toLowerCase(), value);
      } else if (name === 'value' && (element instanceof HTMLInputElement || element instanceof HTMLTextAreaElement)) {
        element.value = String(value);
      } else {
        element.setAttribute(name, value === true ? '' : String(value));
      }
    }
  }
  append(element, children);
  return element;
}

function append(parent: Node, children: readonly Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child as readonly Child[]);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function mount(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** A small inline SVG element (the throughput chart). */
export function svg<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const element = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const [name, value] of Object.entries(attrs)) element.setAttribute(name, String(value));
  return element;
}

/**
 * Re-renders `container` and gives focus back to the element with the same `data-focus` key, so
 * a keyboard user does not lose their place when a live refresh rebuilds a list or a table.
 */
export function keepFocus(container: Element, render: () => void): void {
  const active = document.activeElement;
  const key = active instanceof HTMLElement && container.contains(active) ? active.dataset.focus : undefined;
  render();
  if (key !== undefined) container.querySelector<HTMLElement>(`[data-focus="${CSS.escape(key)}"]`)?.focus();
}
