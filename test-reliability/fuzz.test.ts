import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../test/helpers/app.ts';
import { fuzzOpenApi, printFuzzReport } from '../test/audits/openapi-fuzz.ts';
import { PrivatePostgres } from './helpers/infra.ts';

/**
 * Scenario 8, long run: the OpenAPI-driven fuzzer of test/audits (which `npm test` runs briefly on
 * PGlite) for RELIABILITY_FUZZ_RUNS requests (default 20,000, at most 8 minutes) against a private
 * PostgreSQL, several seeds in a row.
 */
const RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 20000);
const SEEDS = 4;
const SECRET = 'reliability-fuzz-secret';

describe('reliability: OpenAPI fuzzing, long run on PostgreSQL', () => {
  let pgServer: PrivatePostgres;

  before(async () => {
    pgServer = await PrivatePostgres.start();
  });

  after(async () => {
    await pgServer?.destroy();
  });

  for (let i = 0; i < SEEDS; i++) {
    it(`seed ${i + 1} of ${SEEDS}: never 5xx, always the error shape, no side effect from a rejected request`, async (t) => {
      const url = await pgServer.createDatabase(`oas_fuzz_${i}_${process.pid}`);
      const app: FastifyInstance = await buildTestApp(t, { role: 'api', databaseUrl: url, shopifyWebhookSecret: SECRET });
      const report = await fuzzOpenApi(app, {
        numRuns: Math.ceil(RUNS / SEEDS),
        timeLimitMs: Math.floor((8 * 60 * 1000) / SEEDS),
        webhookSecret: SECRET,
        ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) + i } : {}),
      });
      printFuzzReport(`scenario 8: OpenAPI fuzzing on PostgreSQL (seed ${i + 1}/${SEEDS})`, report);
      assert.equal(report.byOperation.size, report.operations, 'every operation was exercised');
    });
  }
});
