// The functions that took the most of a V8 CPU profile's time (bench/metrics.ts --cpu-profile writes one):
//   node bench/profileTop.mjs FILE [COUNT]
// Self time (the function's own code) and total time (with what it called, each function counted once per stack).
import * as fs from 'node:fs';

const [file, countArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profileTop.mjs FILE.cpuprofile [COUNT]');
  process.exit(2);
}
const count = Number(countArg ?? 40);
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (n) => {
  const f = n.callFrame;
  const where = f.url ? ` ${f.url.split('/').slice(-2).join('/')}` : '';
  return `${f.functionName || '(anonymous)'}${where}`;
};
const self = new Map();
const total = new Map();
let all = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  all += dt;
  const leaf = nodes.get(id);
  if (leaf.callFrame.functionName === '(idle)') {
    idle += dt;
    return;
  }
  self.set(name(leaf), (self.get(name(leaf)) ?? 0) + dt);
  const seen = new Set();
  for (let n = leaf; n; n = nodes.get(parent.get(n.id))) {
    const k = name(n);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + dt);
  }
});
const msOf = (us) => (us / 1000).toFixed(1).padStart(8);
console.log(`${msOf(all)} ms profiled, ${msOf(idle).trim()} ms idle, ${msOf(all - idle).trim()} ms busy`);
console.log('\nself ms  function');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${msOf(v)}  ${k}`);
console.log('\ntotal ms function');
for (const [k, v] of [...total].sort((a, b) => b[1] - a[1]).slice(0, count)) console.log(`${msOf(v)}  ${k}`);
