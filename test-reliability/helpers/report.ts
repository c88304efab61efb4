import fs from 'node:fs';
import path from 'node:path';

export type Figures = [string, string | number | boolean][];

/**
 * Prints a scenario's figures as a two-column table (through the test runner's diagnostics and
 * stderr) and appends them as JSON lines to test-results/reliability.jsonl for later comparison.
 */
export function printTable(scenario: string, figures: Figures): void {
  const width = Math.max(...figures.map(([k]) => k.length), 'figure'.length);
  const valueWidth = Math.max(...figures.map(([, v]) => String(v).length), 'value'.length);
  const line = `+${'-'.repeat(width + 2)}+${'-'.repeat(valueWidth + 2)}+`;
  const rows = [
    `${scenario}`,
    line,
    `| ${'figure'.padEnd(width)} | ${'value'.padEnd(valueWidth)} |`,
    line,
    ...figures.map(([k, v]) => `| ${k.padEnd(width)} | ${String(v).padEnd(valueWidth)} |`),
    line,
  ];
  process.stderr.write(`\n${rows.join('\n')}\n`);
  try {
    const dir = path.resolve(import.meta.dirname, '..', '..', 'test-results');
    fs.mkdirSync(dir, { recursive: true });
    fs.appendFileSync(
      path.join(dir, 'reliability.jsonl'),
      `${JSON.stringify({ scenario, at: new Date().toISOString(), figures: Object.fromEntries(figures) })}\n`,
    );
  } catch {
    // the table on stderr is the report; the file is a convenience
  }
}

export const round = (n: number, digits = 0): number => Number(n.toFixed(digits));
