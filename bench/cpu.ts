/**
 * CPU time spent per request, by process group (Linux /proc). Unlike latency, CPU time does not
 * depend on how busy or noisy the machine is, so it compares two versions of the service fairly even
 * when a neighbour steals CPU (the steal share of the window is reported beside it).
 */
import fs from 'node:fs';
import type pg from 'pg';

const TICK_MS = 10; // USER_HZ is 100 on every Linux architecture Node runs on

export interface CpuSource {
  /** the service processes by group name ('api', 'worker') */
  processes: () => Record<string, number[]>;
  /** the PostgreSQL backends of the bench database, by application_name */
  db: pg.Client;
  database: string;
}

interface Snapshot {
  ticks: Map<string, number>; // `${group}\0${pid}` → utime + stime
  steal: number;
  all: number;
}

export interface CpuCost {
  /** CPU ms per request, by group ('api', 'worker', 'pg api', 'pg worker', 'pg jobs') */
  perRequestMs: Record<string, number>;
  totalPerRequestMs: number;
  /** share of the machine's CPU time the hypervisor took during the window */
  stealPct: number;
}

function procTicks(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined; // exited, or no /proc
  }
}

function machineTicks(): { steal: number; all: number } {
  try {
    const cpu = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    return { steal: cpu[7] ?? 0, all: cpu.reduce((a, b) => a + b, 0) };
  } catch {
    return { steal: 0, all: 0 };
  }
}

/** Service pool connections are named oas-<role>, pg-boss's own pool pgboss. */
function pgGroup(applicationName: string): string {
  if (applicationName === 'pgboss') return 'pg jobs';
  if (applicationName.startsWith('oas-')) return `pg ${applicationName.slice(4)}`;
  return 'pg other';
}

async function snapshot(src: CpuSource): Promise<Snapshot> {
  const ticks = new Map<string, number>();
  for (const [group, pids] of Object.entries(src.processes())) {
    for (const pid of pids) {
      const t = procTicks(pid);
      if (t !== undefined) ticks.set(`${group}\0${pid}`, t);
    }
  }
  const { rows } = await src.db.query<{ pid: number; app: string }>(
    'SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
    [src.database],
  );
  for (const r of rows) {
    const t = procTicks(Number(r.pid));
    if (t !== undefined) ticks.set(`${pgGroup(r.app)}\0${r.pid}`, t);
  }
  return { ticks, ...machineTicks() };
}

/** Starts a measurement; `stop(requests)` gives the CPU per request since the start. */
export async function cpuMeter(src: CpuSource): Promise<{ stop: (requests: number) => Promise<CpuCost> }> {
  const first = await snapshot(src);
  return {
    async stop(requests: number): Promise<CpuCost> {
      const last = await snapshot(src);
      const byGroup: Record<string, number> = {};
      // a backend that connected during the window counts from zero; one that left is lost (rare:
      // pools keep their connections for 30 s of idleness)
      for (const [key, t] of last.ticks) {
        const group = key.split('\0')[0];
        byGroup[group] = (byGroup[group] ?? 0) + (t - (first.ticks.get(key) ?? 0)) * TICK_MS;
      }
      const n = Math.max(1, requests);
      const perRequestMs = Object.fromEntries(Object.entries(byGroup).map(([g, ms]) => [g, ms / n]));
      const all = last.all - first.all;
      return {
        perRequestMs,
        totalPerRequestMs: Object.values(perRequestMs).reduce((a, b) => a + b, 0),
        stealPct: all > 0 ? (100 * (last.steal - first.steal)) / all : 0,
      };
    },
  };
}

export function costLine(c: CpuCost): string {
  const parts = Object.entries(c.perRequestMs)
    .filter(([, ms]) => ms >= 0.005)
    .sort((a, b) => b[1] - a[1])
    .map(([g, ms]) => `${g} ${ms.toFixed(2)}`);
  return `CPU per request ${c.totalPerRequestMs.toFixed(2)} ms (${parts.join(', ')}); steal ${c.stealPct.toFixed(0)} %`;
}
