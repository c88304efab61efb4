import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { buildTestApp, LogCapture, waitFor } from '../helpers/app.ts';
import { withAdmin } from '../helpers/database-template.ts';
import { OutageLog } from '../../src/db/outage-log.ts';

const SERVER = process.env.TEST_DATABASE_URL;
const OUTAGE_LINE = /^database unavailable \(/;
const BACK_LINE = /^database is back after [\d.]+ s unavailable$/;

describe('a dependency outage is two lines: when it starts and when it is over', () => {
  it('OutageLog: the first failure at error level, the rest at debug, the return once', async () => {
    const logs = new LogCapture();
    let up = false;
    const outage = new OutageLog(pino({ level: 'debug' }, logs), 'database', async () => {
      if (!up) throw new Error('connect ECONNREFUSED');
    });
    for (let i = 0; i < 50; i++) outage.failed(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }), 'job queue');
    const above = () => logs.parsed().filter((l) => (l.level as number) > 20);
    assert.equal(above().length, 1);
    assert.match(String(above()[0].msg), OUTAGE_LINE);
    assert.equal(above()[0].err, undefined, 'no stack in the outage line');
    assert.equal(logs.parsed().filter((l) => l.level === 20).length, 50, 'every error at debug level, with its stack');
    up = true;
    await waitFor(async () => (above().length === 2 ? true : undefined), 5000, 50);
    assert.match(String(above()[1].msg), BACK_LINE);
    outage.answered();
    assert.equal(above().length, 2, 'told once');
  });

  it(
    'PostgreSQL refusing connections for a few seconds under requests and job polling: one line down, one line back',
    { skip: !SERVER && 'PostgreSQL only', timeout: 90000 },
    async (t) => {
      const logs = new LogCapture();
      // fetch loops poll every 0.5 s here, so each of the worker's queues fails several times a second
      const app = await buildTestApp(t, { logLevel: 'info' }, { logStream: logs });
      const database = new URL(app.ctx.config.databaseUrl!).pathname.slice(1);
      let refusing = false;
      const allow = (on: boolean) =>
        withAdmin(SERVER!, async (c) => {
          await c.query(`ALTER DATABASE "${database}" ALLOW_CONNECTIONS ${on}`);
          refusing = !on;
          if (!on) await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
        });
      // a failed assertion mid-outage still leaves the database open (the app closes and it is dropped)
      t.after(() => (refusing ? allow(true) : undefined));
      const from = logs.lines.length;
      // a sign-in reads the users table: while the database refuses connections it answers 503
      const signIn = async () =>
        (await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: 'nobody@example.com', password: 'not-the-password' } })).statusCode;

      await allow(false);
      // requests fail (503) and every fetch loop fails while the database refuses connections
      const statuses = new Set<number>();
      await waitFor(async () => {
        statuses.add(await signIn());
        return logs.parsed().some((l) => OUTAGE_LINE.test(String(l.msg))) ? true : undefined;
      }, 30000, 100);
      const outageSeen = Date.now();
      // the outage goes on for 3 s more: what it logs meanwhile is what this test counts
      while (Date.now() - outageSeen < 3000) {
        statuses.add(await signIn());
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.ok(statuses.has(503), `requests answered 503 during the outage (${[...statuses].join(', ')})`);
      await allow(true);
      await waitFor(async () => (logs.parsed().some((l) => BACK_LINE.test(String(l.msg))) ? true : undefined), 30000, 100);

      const told = logs.parsed().slice(from).filter((l) => (l.level as number) >= 40);
      const errors = told.filter((l) => (l.level as number) >= 50);
      assert.equal(errors.length, 1, JSON.stringify(errors, null, 1));
      assert.match(String(errors[0].msg), OUTAGE_LINE);
      // nothing besides it: the user cache's change feed (a connection of its own) reports to the same line
      assert.equal(told.length, 1, JSON.stringify(told.map((l) => l.msg)));
      for (const l of told) assert.equal(l.err, undefined, `no stack above debug level: ${String(l.msg)}`);
      assert.equal(logs.parsed().filter((l) => BACK_LINE.test(String(l.msg))).length, 1);
      // and one line back: the feed's return, once its outage was the database's, is at debug level
      await waitFor(async () => (app.ctx.userCache.enabled ? true : undefined), 30000, 100);
      const back = logs.parsed().slice(from).filter((l) => (l.level as number) === 30 && /back/.test(String(l.msg)));
      assert.equal(back.length, 1, JSON.stringify(back.map((l) => l.msg)));
      t.diagnostic(`lines at warn or above during the outage: ${told.length}; answers: ${[...statuses].join(', ')}`);
    },
  );
});
