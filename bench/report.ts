/**
 * The report phase and the bench's output: the run's header, the stdout tables, the target verdicts,
 * the SVG chart and the results file.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { elapsed, log, type RunContext } from './context.ts';
import type { CpuCost } from './cpu.ts';
import { HIGH_LIMIT } from './options.ts';
import type { Bench } from './scenario.ts';
import type { LoadResult, LoadSummary } from './types.ts';

export interface ScenarioRow {
  name: string;
  service: LoadResult;
  baseline?: LoadResult;
  /** CPU time per request, with the processing it queued (bench/cpu.ts) */
  cpu?: CpuCost;
}

export interface Target {
  name: string;
  value: string;
  target: string;
  pass: boolean;
  /** shown beside the targets for context, but not one of the issue's targets: not counted in the tally */
  informative?: boolean;
}

/** One decimal, or '-' for NaN and infinities. */
export const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : '-');
const ms = (v: number): string => (Number.isFinite(v) ? v.toFixed(v < 10 ? 2 : 1) : '-');
const int = (v: number): string => (Number.isFinite(v) ? Math.round(v).toLocaleString('en-US') : '-');

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = widths.map((w) => '-'.repeat(w)).join('  ');
  return [pad(headers, widths), line, ...rows.map((r) => pad(r, widths))].join('\n');
}

/** Non-2xx answers and socket errors, so a fast run of errors is never mistaken for a fast service. */
export function failures(r: LoadResult): string {
  const bad = Object.entries(r.statuses)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, n]) => `${code}×${n}`);
  if (r.errors) bad.push(`errors×${r.errors}`);
  if (r.timeouts) bad.push(`timeouts×${r.timeouts}`);
  return bad.join(' ');
}

export function scenarioTable(rows: ScenarioRow[]): string {
  return table(
    ['scenario', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'base req/s', 'base p99', 'ratio', 'CPU ms/req', 'non-2xx/errors'],
    rows.map((r) => {
      const baseFailures = r.baseline ? failures(r.baseline) : '';
      return [
        r.name,
        int(r.service.okRps),
        ms(r.service.latency.p50),
        ms(r.service.latency.p95),
        ms(r.service.latency.p99),
        ms(r.service.latency.max),
        r.baseline ? int(r.baseline.okRps) : '',
        r.baseline ? ms(r.baseline.latency.p99) : '',
        r.baseline ? (r.service.okRps / r.baseline.okRps).toFixed(2) : '',
        r.cpu ? r.cpu.totalPerRequestMs.toFixed(2) : '',
        [failures(r.service), baseFailures ? `base: ${baseFailures}` : ''].filter(Boolean).join(' | '),
      ];
    }),
  );
}

export function targetTable(targets: Target[]): string {
  return table(
    ['target', 'measured', 'goal', 'verdict'],
    targets.map((t) => [t.informative ? `${t.name} (informative)` : t.name, t.value, t.target, verdict(t)]),
  );
}

function verdict(t: Target): string {
  if (t.informative) return t.pass ? '(within)' : '(over)';
  return t.pass ? 'PASS' : 'MISS';
}

/** "15/15 targets met", then how the informative rows stood */
export function targetTally(targets: Target[]): string {
  const judged = targets.filter((t) => !t.informative);
  const info = targets.filter((t) => t.informative);
  const met = `${judged.filter((t) => t.pass).length}/${judged.length} targets met`;
  return info.length ? `${met}; informative rows within their goal: ${info.filter((t) => t.pass).length}/${info.length}` : met;
}

export function summaryLine(s: LoadSummary): string {
  return `p50 ${ms(s.p50)} ms, p95 ${ms(s.p95)} ms, p99 ${ms(s.p99)} ms`;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** Grouped bars: per scenario the service's p50/p95/p99 next to the baseline's (hand-written SVG). */
export function latencyChart(rows: ScenarioRow[], title: string): string {
  const W = 1000;
  const H = 460;
  const left = 60;
  const right = 20;
  const top = 50;
  const bottom = 110;
  const plotW = W - left - right;
  const plotH = H - top - bottom;
  // a log scale: the reads (a few ms) and the saturated writes and logins (hundreds) on one chart
  const values = rows.flatMap((r) => [r.service.latency.p99, r.baseline?.latency.p99 ?? 0]).filter(Number.isFinite);
  const rawMax = Math.max(10, ...values);
  const ticks = [0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000];
  const yMin = 0.5;
  const yMax = ticks.find((t) => t >= rawMax) ?? rawMax;
  const y = (v: number) => top + plotH - (Math.log(Math.min(Math.max(v, yMin), yMax) / yMin) / Math.log(yMax / yMin)) * plotH;
  const series = [
    { key: 'p50', color: '#9ecae1' },
    { key: 'p95', color: '#4292c6' },
    { key: 'p99', color: '#08519c' },
  ] as const;
  const baseColors = ['#d9d9d9', '#a6a6a6', '#636363'];
  const groupW = plotW / Math.max(1, rows.length);
  const barW = Math.min(18, (groupW - 16) / 6);
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="24" text-anchor="middle" font-size="16" font-weight="bold">${esc(title)}</text>`);
  for (const v of ticks.filter((t) => t <= yMax)) {
    out.push(`<line x1="${left}" x2="${W - right}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/>`);
    out.push(`<text x="${left - 6}" y="${y(v) + 4}" text-anchor="end">${v}</text>`);
  }
  // the read p99 goal at 32 connections (issue 6; informative since issue 53)
  out.push(`<line x1="${left}" x2="${W - right}" y1="${y(25)}" y2="${y(25)}" stroke="#d62728" stroke-dasharray="6 4"/>`);
  out.push(`<text x="${W - right - 4}" y="${y(25) - 5}" text-anchor="end" fill="#d62728">read p99 25 ms (informative)</text>`);
  out.push(`<text x="16" y="${top + plotH / 2}" transform="rotate(-90 16 ${top + plotH / 2})" text-anchor="middle">latency (ms, log scale)</text>`);
  rows.forEach((r, i) => {
    const x0 = left + i * groupW + (groupW - barW * 6 - 4) / 2;
    series.forEach((s, j) => {
      const v = r.service.latency[s.key];
      out.push(`<rect x="${x0 + j * barW}" y="${y(v)}" width="${barW - 1}" height="${top + plotH - y(v)}" fill="${s.color}"><title>${esc(r.name)} service ${s.key}: ${ms(v)} ms</title></rect>`);
      if (r.baseline) {
        const b = r.baseline.latency[s.key];
        const bx = x0 + 4 + (3 + j) * barW;
        out.push(`<rect x="${bx}" y="${y(b)}" width="${barW - 1}" height="${top + plotH - y(b)}" fill="${baseColors[j]}"><title>${esc(r.name)} baseline ${s.key}: ${ms(b)} ms</title></rect>`);
      }
    });
    const cx = left + i * groupW + groupW / 2;
    out.push(`<text x="${cx}" y="${top + plotH + 16}" text-anchor="end" transform="rotate(-30 ${cx} ${top + plotH + 16})">${esc(r.name)}</text>`);
  });
  out.push(`<line x1="${left}" x2="${W - right}" y1="${top + plotH}" y2="${top + plotH}" stroke="#333"/>`);
  const legend = [
    ...series.map((s) => ({ label: `service ${s.key}`, color: s.color })),
    ...series.map((s, j) => ({ label: `baseline ${s.key}`, color: baseColors[j] })),
  ];
  legend.forEach((l, i) => {
    const lx = left + i * 150;
    out.push(`<rect x="${lx}" y="${H - 22}" width="12" height="12" fill="${l.color}"/><text x="${lx + 16}" y="${H - 12}">${l.label}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}

/** Prints what the run is about to measure, and starts the report (bench/results/bench-<time>.json). */
export function startReport(ctx: RunContext): Record<string, unknown> {
  const { quick, connections, duration, warmup, orders, users, scaleSmall, scaleLarge, split, topology } = ctx.opts;
  log(`oas bench ${quick ? '(quick) ' : ''}— run ${ctx.runId}`);
  log(
    `  ${os.cpus().length} CPUs, Node ${process.version}, ${connections} connections, ${duration} s per scenario (+${warmup} s warm-up), ` +
      `${orders.toLocaleString('en-US')} orders, ${users.toLocaleString('en-US')} users; logs in ${ctx.logDir}`,
  );
  log(`  service: ${split ? 'one ROLE=api process + one ROLE=worker process (--topology split)' : 'one ROLE=all process (--topology all)'}`);
  log(`  rate limits set to ${HIGH_LIMIT} per window for the throughput scenarios (every request is still counted in Redis)`);
  return {
    runId: ctx.runId,
    startedAt: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    machine: { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    config: { connections, duration, warmup, orders, users, scaleSmall, scaleLarge, bcryptRounds: 10, topology },
  };
}

/** bench/results/latency.svg, when the run measured any scenario on the main database. */
export function writeChart(ctx: RunContext, rows: ScenarioRow[]): void {
  if (!rows.length) return;
  const title = `Latency per scenario, service vs bare baseline (${ctx.opts.connections} connections, ${os.cpus().length} CPUs)`;
  fs.writeFileSync(path.join(ctx.resultsDir, 'latency.svg'), latencyChart(rows, title));
}

/** The report phase: the results file, then the scenario, query and target tables and the tally. */
export function writeResults(b: Bench): void {
  const { ctx, report, rows, targets, queriesUnderLoad } = b;
  report.targets = targets;
  report.finishedAt = new Date().toISOString();
  report.totalSeconds = (Date.now() - ctx.started) / 1000;
  const file = path.join(ctx.resultsDir, `bench-${new Date().toISOString().replace(/[:.]/g, '-')}${ctx.opts.quick ? '-quick' : ''}.json`);
  fs.writeFileSync(file, JSON.stringify(report, null, 2));
  if (rows.length) log(`\n${scenarioTable(rows)}\n`);
  if (queriesUnderLoad) {
    log(
      table(
        ['query (under mixed load)', 'p50 ms', 'p95 ms', 'p99 ms', 'n'],
        Object.entries(queriesUnderLoad.perQuery).map(([n, q]) => [n, q.p50.toFixed(2), q.p95.toFixed(2), q.p99.toFixed(2), String(q.n)]),
      ),
    );
  }
  log(`\n${targetTable(targets)}\n`);
  log(`${targetTally(targets)}; total ${elapsed(ctx)}`);
  const chart = path.join(ctx.resultsDir, 'latency.svg');
  log(`results: ${path.relative(ctx.root, file)}${rows.length ? `, chart: ${path.relative(ctx.root, chart)}` : ''}`);
}
