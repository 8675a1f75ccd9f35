/** `put`: an own entry for any key, `__proto__` included (src/shared/dict.ts, shared with the webview). */
export { put } from '../../shared/dict';
