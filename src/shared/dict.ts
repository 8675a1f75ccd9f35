/**
 * Entries of plain objects keyed by names that come from outside (metric names in a log, result keys an eval
 * printed, env names in a profile). `obj[k] = v` with k = `__proto__` sets the object's prototype instead of an entry
 * (the key is lost: a metric named so vanished from the eval table's CSV). `put` always defines an own entry, which
 * then reads back, spreads and serialises like any other. In src/shared so the webview bundle uses the same one.
 */
export function put<T>(obj: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(obj, key, { value, writable: true, enumerable: true, configurable: true });
}
