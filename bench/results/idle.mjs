import pg from 'pg';
import fs from 'node:fs';
const [db, nodePid, secs = '20'] = process.argv.slice(2);
const c = new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:5432/postgres` }); await c.connect();
const cpu = (p) => { try { const f = fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' '); return (+f[11] + +f[12]) * 10; } catch { return undefined; } };
const backends = async () => (await c.query(`select pid, application_name as app from pg_stat_activity where datname = $1`, [db])).rows;
const start = new Map(); const seen = new Map();
for (const b of await backends()) { start.set(b.pid, cpu(b.pid)); seen.set(b.pid, b.app); }
const n0 = cpu(+nodePid);
const last = new Map(start);
const end = Date.now() + +secs * 1000; let newConns = 0;
while (Date.now() < end) {
  for (const b of await backends()) { if (!seen.has(b.pid)) { seen.set(b.pid, b.app); start.set(b.pid, 0); newConns++; } const v = cpu(b.pid); if (v !== undefined) last.set(b.pid, v); }
  await new Promise((r) => setTimeout(r, 200));
}
const byApp = {};
for (const [pid, s] of start) byApp[seen.get(pid)] = (byApp[seen.get(pid)] ?? 0) + (last.get(pid) - s);
console.log(`node ${cpu(+nodePid) - n0} ms in ${secs}s; backends ms`, byApp, 'new connections', newConns);
await c.end();
