/**
 * A real CommonMark renderer (markdown-it, a devDependency) for asserting what a hover's markdown becomes,
 * with raw HTML and bare-link detection on so nothing is kinder than the editor's renderer.
 */
import { createRequire } from 'node:module';

interface Renderer {
  render(src: string): string;
}

const MarkdownIt = createRequire(__filename)('markdown-it') as new (options: object) => Renderer;
const md = new MarkdownIt({ html: true, linkify: true });

/** `src` as the HTML a markdown renderer makes of it. */
export function renderMarkdown(src: string): string {
  return md.render(src);
}
