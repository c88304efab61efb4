import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PGlite } from '@electric-sql/pglite';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db/database.ts';

/**
 * timestamptz values as the service reads them: node-pg's default parser (pg-types) on PostgreSQL,
 * the same parser handed to PGlite (src/db/database.ts). Each value is checked against PostgreSQL's
 * own epoch, in session time zones whose offsets have minutes, and seconds before 1900 (local mean
 * time). Run on the database the suite runs on.
 */
const VALUES = [
  '2026-11-22 05:12:33.285917+00',
  '1999-12-31 23:59:59.9995+00',
  '1850-06-01 12:00:00+00',
  '0099-06-01 12:00:00+00',
  '0001-01-01 00:00:00+00',
  '0044-03-15 12:00:00+00 BC',
  '9999-12-31 23:59:59.999+00',
  '12026-06-01 12:00:00+00',
  'infinity',
  '-infinity',
];
const ZONES = ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Kiritimati', 'Europe/Amsterdam'];
const SELECT = sql.raw(
  `SELECT at, at::text AS text, CASE WHEN isfinite(at) THEN floor(extract(epoch FROM at) * 1000)::float8 END AS ms
   FROM (VALUES ${VALUES.map((v) => `('${v}'::timestamptz)`).join(', ')}) AS v(at)`,
);

type Row = { at: Date | number; text: string; ms: number | null };

function check(rows: Row[], zone: string): void {
  assert.equal(rows.length, VALUES.length);
  for (const r of rows) {
    if (r.ms === null) assert.equal(r.at, r.text === 'infinity' ? Infinity : -Infinity, `${zone}: ${r.text}`);
    else assert.equal((r.at as Date).getTime(), r.ms, `${zone}: ${r.text}`);
  }
}

describe('timestamptz values read from the database', () => {
  it("are the instants PostgreSQL stores, in every session time zone (the service's parsers)", async (t) => {
    const handle = await createDatabase({ databaseUrl: process.env.TEST_DATABASE_URL || ':memory:', dataDir: '' });
    t.after(() => handle.close());
    for (const zone of ZONES) {
      const rows = await handle.db.transaction().execute(async (trx) => {
        await sql`SELECT set_config('TimeZone', ${zone}, true)`.execute(trx);
        return (await sql<Row>`${SELECT}`.execute(trx)).rows;
      });
      check(rows, zone);
    }
  });

  it("PGlite's own parser is wrong for years before 100, BC and offsets with seconds: why the service hands it pg-types'", async (t) => {
    const pglite = await PGlite.create();
    t.after(() => pglite.close());
    await pglite.exec(`SET TIME ZONE 'UTC'`);
    const { rows } = await pglite.query<{ at: Date }>(`SELECT '0099-06-01 12:00:00+00'::timestamptz AS at UNION ALL SELECT '0044-03-15 12:00:00+00 BC'`);
    assert.equal(rows[0].at.toISOString(), '1999-06-01T12:00:00.000Z', 'year 0099 read as 1999');
    assert.ok(Number.isNaN(rows[1].at.getTime()), 'BC read as an invalid date');
    await pglite.exec(`SET TIME ZONE 'Asia/Kolkata'`);
    const lmt = await pglite.query<{ at: Date }>(`SELECT '1850-06-01 12:00:00+00'::timestamptz AS at`);
    assert.ok(Number.isNaN(lmt.rows[0].at.getTime()), 'an offset with seconds (+05:53:28) read as an invalid date');
  });
});
