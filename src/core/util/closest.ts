/** The candidate nearest to `word` by edit distance (Levenshtein), if one is near enough to be a likely typo. */
export function closestName(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; d: number } | undefined;
  for (const c of candidates) {
    if (c === word) continue;
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (!best || d < best.d) best = { name: c, d };
  }
  // A third of the longer name, at least 1 and at most 3 edits: `gpu-1` → `gpu1`, but never `a100` → `box`.
  if (!best) return undefined;
  const limit = Math.min(3, Math.max(1, Math.floor(Math.max(word.length, best.name.length) / 3)));
  return best.d <= limit ? best.name : undefined;
}

export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}
