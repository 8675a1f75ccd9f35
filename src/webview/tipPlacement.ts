/**
 * Where a tooltip goes: beside its anchor, above it, and always whole inside the viewport (a point at the right
 * edge gets its tooltip on its left; one at the top gets it below). Viewport coordinates. Pure, unit-tested in node.
 */

export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** Top-left of a `tip`-sized box near `anchor`, inside a `viewport`-sized window with `margin` to spare. */
export function placeTip(anchor: Box, tip: { width: number; height: number }, viewport: { width: number; height: number }, gap = 4, margin = 2): { left: number; top: number } {
  const fitsRight = anchor.left + anchor.width + gap + tip.width <= viewport.width - margin;
  let left = fitsRight ? anchor.left + anchor.width + gap : anchor.left - gap - tip.width;
  left = Math.max(margin, Math.min(left, viewport.width - margin - tip.width));
  let top = anchor.top - gap - tip.height;
  if (top < margin) top = anchor.top + anchor.height + gap;
  top = Math.max(margin, Math.min(top, viewport.height - margin - tip.height));
  return { left: Math.round(left), top: Math.round(top) };
}
