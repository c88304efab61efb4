/** The bench's flags (bench/README.md lists them) and what they default to in a full and a quick run. */
import { parseArgs } from 'node:util';

export const PHASES = ['reads', 'writes', 'mixed', 'logins', 'cluster', 'scale', 'soak'] as const;
export type Phase = (typeof PHASES)[number];

/** users logged in for the load (each request is sent as one of them) */
export const LOGGED_IN = 50;
export const PASSWORD = 'bench-password-1';
export const ADMIN_PASSWORD = 'bench-admin-password-1';
export const WEBHOOK_SECRET = 'bench-shopify-secret';
/** the rate limits per window: every request is counted, none refused */
export const HIGH_LIMIT = '1000000000';
export const PRODUCTS = 1000;

export interface Options {
  quick: boolean;
  /** split: one ROLE=api process plus one ROLE=worker process (the fleet topology); all: one ROLE=all process */
  topology: string;
  split: boolean;
  /** whether `--only` (or the mode's default) includes a phase */
  phase: (p: Phase) => boolean;
  orders: number;
  users: number;
  duration: number;
  warmup: number;
  connections: number;
  scaleSmall: number;
  /** the large size of the scale phase; 0: no scale phase */
  scaleLarge: number;
  scaleDuration: number;
  /** seconds of the mixed load on `npm start` (embedded database) whose memory is followed */
  soakSeconds: number;
  /** how long to wait for the job backlog after a write scenario */
  drainTimeoutMs: number;
  /** the service's port; the baseline's is `port + 1`, the split worker's `port + 2` */
  port: number;
  basePort: number;
  /** requests per second of the paced write scenarios (latency below saturation, open loop) */
  rate: number;
  /** higher paced rates tried after `rate` (informative, stopping at the first miss): full run 2× and 4× `rate`, quick none */
  headroom: number[];
  noCluster: boolean;
  cpuProf: boolean;
  keepDb: boolean;
  keepLogs: boolean;
}

/** Parses the command line; throws on a value it does not know. */
export function parseOptions(): Options {
  const { values: args } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      orders: { type: 'string' },
      users: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string', default: '32' },
      scale: { type: 'string' },
      'no-scale': { type: 'boolean', default: false },
      'no-cluster': { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      'keep-db': { type: 'boolean', default: false },
      'keep-logs': { type: 'boolean', default: false },
      port: { type: 'string', default: '18400' },
      rate: { type: 'string', default: '50' },
      headroom: { type: 'string' },
      only: { type: 'string' },
      'soak-seconds': { type: 'string' },
      topology: { type: 'string', default: 'split' },
    },
  });
  if (!['split', 'all'].includes(args.topology ?? '')) throw new Error(`--topology: split or all, got ${args.topology}`);
  // a quick run (a CI smoke, under 2 min) leaves out the WEB_CONCURRENCY comparison, which has no
  // target and starts three more processes; `--only cluster` still runs it
  const quickDefault = PHASES.filter((p) => p !== 'cluster');
  const only = new Set((args.only ?? (args.quick ? quickDefault : PHASES).join(',')).split(',').map((s) => s.trim()));
  for (const p of only) if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--only: unknown phase ${p} (${PHASES.join(', ')})`);

  const quick = args.quick;
  const rate = Number(args.rate);
  const headroom = (args.headroom ?? (quick ? '' : `${2 * rate},${4 * rate}`)).split(',').filter(Boolean).map(Number);
  if (headroom.some((r) => !(r > 0))) throw new Error(`--headroom: comma-separated rates, got ${args.headroom}`);
  const port = Number(args.port);
  return {
    quick,
    topology: args.topology,
    split: args.topology === 'split',
    phase: (p) => only.has(p),
    orders: Number(args.orders ?? (quick ? 10_000 : 100_000)),
    users: Number(args.users ?? (quick ? 300 : 1_000)),
    duration: Number(args.duration ?? (quick ? 3 : 10)),
    warmup: Number(args.warmup ?? (quick ? 1 : 2)),
    connections: Number(args.connections),
    scaleSmall: 10_000,
    scaleLarge: args['no-scale'] || !only.has('scale') ? 0 : Number(args.scale ?? (quick ? 100_000 : 1_000_000)),
    scaleDuration: quick ? 2 : 5,
    soakSeconds: Number(args['soak-seconds'] ?? (quick ? 30 : 300)),
    drainTimeoutMs: quick ? 15_000 : 60_000,
    port,
    basePort: port + 1,
    rate,
    headroom,
    noCluster: args['no-cluster'],
    cpuProf: args['cpu-prof'],
    keepDb: args['keep-db'],
    keepLogs: args['keep-logs'],
  };
}
