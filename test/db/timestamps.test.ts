import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import pg from 'pg';
import '../../src/db/database.ts'; // registers the timestamptz parser
import { Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, DummyDriver, sql } from 'kysely';
import { isoTimestampSql, parseIsoTimestamptz, toIsoString } from '../../src/db/timestamps.ts';

const MIN = Date.UTC(1000, 0, 1);
const MAX = Date.UTC(9999, 11, 31, 23, 59, 59, 999);
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** `t` (ms) plus `micros` written as PostgreSQL writes a timestamptz in a zone `offset` minutes east. */
function asPostgresText(t: number, micros: number, offset: number): string {
  const local = new Date(t + offset * 60_000);
  const frac = (local.getUTCMilliseconds() * 1000 + micros).toString().padStart(6, '0').replace(/0+$/, '');
  const off = Math.abs(offset);
  return (
    `${local.getUTCFullYear()}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())} ` +
    `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${frac ? `.${frac}` : ''}` +
    `${offset < 0 ? '-' : '+'}${pad(Math.floor(off / 60))}${off % 60 ? `:${pad(off % 60)}` : ''}`
  );
}

describe('timestamptz text', () => {
  it('parses any instant in any whole-minute offset to the exact millisecond', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: MIN + 15 * 3_600_000, max: MAX - 15 * 3_600_000 }),
        fc.integer({ min: 0, max: 999 }),
        fc.integer({ min: -15 * 60, max: 15 * 60 }),
        (t, micros, offset) => {
          const text = asPostgresText(t, micros, offset);
          assert.equal(parseIsoTimestamptz(text)?.getTime(), t, text);
        },
      ),
    );
    // pg-types computes 1000 × 0.285 = 284.99… and keeps 284 ms
    assert.equal(parseIsoTimestamptz('2026-11-22 05:12:33.285+00')?.toISOString(), '2026-11-22T05:12:33.285Z');
  });

  it('leaves every other shape to the general parser', () => {
    for (const text of ['infinity', '-infinity', '0099-01-01 00:00:00+00', '12026-01-01 00:00:00+00', '2026-01-01 00:00:00+00 BC', '1850-01-01 00:00:00+00:19:32', '2026-01-01 00:00:00', '2026-1x-01 00:00:00+00']) {
      assert.equal(parseIsoTimestamptz(text), undefined, text);
    }
    const general = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
    assert.equal(general('infinity'), Infinity);
    assert.equal((general('1850-01-01 00:00:00+00:19:32') as Date).toISOString(), '1849-12-31T23:40:28.000Z');
  });

  it('formats exactly as Date#toISOString', () => {
    fc.assert(fc.property(fc.integer({ min: -8.64e15, max: 8.64e15 }), (t) => assert.equal(toIsoString(new Date(t)), new Date(t).toISOString())));
    assert.throws(() => toIsoString(new Date(NaN)), RangeError);
  });

  it('reads what PostgreSQL writes, in every session time zone', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async () => {
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await client.connect();
    try {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Kiritimati', 'Europe/Amsterdam']) {
        await client.query(`SET TIME ZONE '${zone}'`);
        const { rows } = await client.query<{ at: Date; text: string; ms: string }>(
          `SELECT at, at::text AS text, CASE WHEN isfinite(at) THEN floor(extract(epoch FROM at) * 1000)::bigint END AS ms
           FROM (VALUES ('2026-11-22 05:12:33.285917+00'::timestamptz), ('1999-12-31 23:59:59.9995+00'), ('1850-06-01 12:00:00+00'), ('2026-03-29 01:30:00+00'), ('infinity')) AS v(at)`,
        );
        for (const r of rows) {
          if (r.text === 'infinity') assert.equal(r.at, Infinity);
          else assert.equal(r.at.getTime(), Number(r.ms), `${zone}: ${r.text}`);
        }
      }
    } finally {
      await client.end();
    }
  });

  it('writes in SQL the text toIsoString gives, in every session time zone', { skip: !process.env.TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, async () => {
    // compiled only: the statement runs on a plain client whose session zone the test sets
    const compiler = new Kysely<{ v: { at: Date } }>({
      dialect: { createAdapter: () => new PostgresAdapter(), createDriver: () => new DummyDriver(), createIntrospector: (db) => new PostgresIntrospector(db), createQueryCompiler: () => new PostgresQueryCompiler() },
    });
    const query = sql<{ at: Date; iso: string }>`SELECT at, ${isoTimestampSql('at')} AS iso FROM (VALUES ('2026-11-22 05:12:33.285917+00'::timestamptz), ('1999-12-31 23:59:59.9995+00'), ('1000-01-01 00:00:00+00'), ('2026-03-29 01:30:00+00'), ('9999-12-31 23:59:59.999999+00')) AS v(at)`.compile(compiler);
    const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
    await client.connect();
    try {
      for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Kiritimati', 'Europe/Amsterdam']) {
        await client.query(`SET TIME ZONE '${zone}'`);
        const { rows } = await client.query<{ at: Date; iso: string }>(query.sql, [...query.parameters]);
        for (const r of rows) assert.equal(r.iso, toIsoString(r.at), zone);
      }
    } finally {
      await client.end();
    }
  });
});
