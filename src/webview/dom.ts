/// <reference lib="dom" />
/** An element with a class (none for ''): the webview's charts and their controls build their DOM with it. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  return e;
}

/**
 * A `<details>` used as a popup menu (a chart's ⋯ menu, the toolbar's Metrics list): closed by a press anywhere
 * outside it and by Escape (focus back on its button), as VS Code's own menus close. One listener pair for the
 * whole page (closeOpenPopups), so charts that come and go leave none behind.
 */
export function popup(className: string): HTMLDetailsElement {
  const d = el('details', className);
  d.dataset.popup = '';
  return d;
}

/** Close every open popup (see popup) that does not contain `keep`; Escape closes them all. Call once per page. */
export function closeOpenPopups(doc: Document): void {
  const open = (): HTMLDetailsElement[] => Array.from(doc.querySelectorAll<HTMLDetailsElement>('details[data-popup][open]'));
  doc.addEventListener(
    'pointerdown',
    (e) => {
      for (const d of open()) if (!(e.target instanceof Node && d.contains(e.target))) d.open = false;
    },
    true,
  );
  doc.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    for (const d of open()) {
      const hadFocus = d.contains(doc.activeElement);
      d.open = false;
      if (hadFocus) d.querySelector('summary')?.focus();
    }
  });
}
