/// <reference lib="dom" />
/** An element with a class (none for ''): the webview's charts and their controls build their DOM with it. */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (className) e.className = className;
  return e;
}
