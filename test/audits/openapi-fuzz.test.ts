import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildTestApp } from '../helpers/app.ts';
import { fuzzOpenApi, printFuzzReport } from './openapi-fuzz.ts';

/**
 * Scenario 8 of the reliability suite, short run (npm test): every operation of /openapi.json
 * fuzzed through app.inject — never a 5xx, always {detail, error_code} on a 4xx, and no stored
 * side effect from a rejected request. FUZZ_RUNS_PER_OPERATION / FUZZ_SEED change the run; the long run is
 * test-reliability/fuzz.test.ts.
 */
const SECRET = 'fuzz-shopify-secret';

describe('OpenAPI-driven fuzzing (fast-check)', () => {
  it('never 5xx, always the error shape, no side effect from a rejected request', { timeout: 600000 }, async (t) => {
    // ROLE=api: no job workers, so nothing changes the database behind a request
    const app = await buildTestApp(t, { role: 'api', shopifyWebhookSecret: SECRET });
    // a fixed number of requests per operation, not a time budget: the same coverage on a busy machine
    const perOperation = Number(process.env.FUZZ_RUNS_PER_OPERATION ?? 10);
    const report = await fuzzOpenApi(app, {
      runsPerOperation: perOperation,
      webhookSecret: SECRET,
      ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
    });
    printFuzzReport('OpenAPI fuzzing (app.inject)', report);
    assert.equal(report.runs, perOperation * report.operations, 'every request was made');
    assert.equal(report.byOperation.size, report.operations, 'every operation was exercised');
  });
});
