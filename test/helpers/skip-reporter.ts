/**
 * A node:test reporter that writes one line per skipped test or suite — its file, its name and the
 * reason it gave — for test/run.ts to print with the totals: a run that skipped what it was meant to
 * run says so where it is read, not only in the middle of a batch's report.
 */
import path from 'node:path';
import type { TestEvent } from 'node:test/reporters';

export default async function* skipReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  for await (const event of source) {
    if (event.type !== 'test:pass' || event.data.skip === undefined || event.data.skip === false) continue;
    const file = event.data.file ? path.relative(process.cwd(), event.data.file) : '(unknown file)';
    const reason = typeof event.data.skip === 'string' ? ` ${event.data.skip}` : '';
    yield `${file}: ${event.data.name} # SKIP${reason}\n`;
  }
}
