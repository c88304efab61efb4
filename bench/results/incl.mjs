import fs from 'node:fs';
const p = JSON.parse(fs.readFileSync(process.argv[2]));
const filter = new RegExp(process.argv[3] ?? '/src/|pg-boss');
const byId = new Map(p.nodes.map(n => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const counts = new Map(); let total = 0, idle = 0;
for (let i = 0; i < p.samples.length; i++) { const d = p.timeDeltas[i] ?? 0; counts.set(p.samples[i], (counts.get(p.samples[i]) ?? 0) + d); total += d; if (byId.get(p.samples[i]).callFrame.functionName === '(idle)') idle += d; }
const incl = new Map();
const key = (n) => { const cf = n.callFrame; return `${cf.functionName || '(anon)'} ${cf.url.replace(/.*node_modules\//, 'nm/').replace(/.*\/work\/main\//, '')}:${cf.lineNumber}`; };
for (const [id, t] of counts) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) { const n = byId.get(cur); if (!filter.test(n.callFrame.url)) continue; const k = key(n); if (seen.has(k)) continue; seen.add(k); incl.set(k, (incl.get(k) ?? 0) + t); }
}
console.log('busy ms', ((total - idle) / 1000).toFixed(0));
for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, +(process.argv[4] ?? 40))) console.log((t / 1000).toFixed(0).padStart(7), k);
