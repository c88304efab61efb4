import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, createUser, errorBody } from '../helpers/app.ts';

async function timedLogin(app: FastifyInstance, username: string, password: string) {
  const started = process.hrtime.bigint();
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, res };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * Real bcrypt costs (the other tests use 4 rounds, where a comparison takes about a millisecond and
 * timing says nothing).
 */
describe('login timing', () => {
  it('unknown e-mail costs as much as a wrong password — from the very first request', { timeout: 60000 }, async (t) => {
    const app = await buildTestApp(t, { bcryptRounds: 10 });
    // createUser signs in once (warming the route, the query and bcrypt itself); the next login is
    // the first unknown e-mail the process sees: there must be no lazy dummy hash left to build
    const alice = await createUser(app);
    const first = await timedLogin(app, 'nobody-first@example.com', 'wrong-password');
    assert.equal(first.res.statusCode, 401);

    const wrong: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 7; i++) {
      const w = await timedLogin(app, alice.email, `wrong-password-${i}`);
      const u = await timedLogin(app, `nobody${i}@example.com`, `wrong-password-${i}`);
      assert.deepEqual(errorBody(w.res), errorBody(u.res));
      wrong.push(w.ms);
      unknown.push(u.ms);
    }
    const [mw, mu] = [median(wrong), median(unknown)];
    t.diagnostic(`median wrong password ${mw.toFixed(1)} ms, unknown e-mail ${mu.toFixed(1)} ms, first request ${first.ms.toFixed(1)} ms`);
    assert.ok(mw > 20, `a 10-round comparison really ran (${mw.toFixed(1)} ms)`);
    assert.ok(mu / mw > 0.6 && mu / mw < 1.6, `unknown e-mail ${mu.toFixed(1)} ms vs wrong password ${mw.toFixed(1)} ms`);
    // a lazily built dummy hash would make the first one cost two bcrypt operations
    assert.ok(first.ms < mw * 1.6 + 15, `first unknown-email login ${first.ms.toFixed(1)} ms vs ${mw.toFixed(1)} ms`);
  });

  it('bcrypt runs on the thread pool: the event loop keeps turning during a 12-round login', { timeout: 60000 }, async (t) => {
    const app = await buildTestApp(t, { bcryptRounds: 12 });
    const alice = await createUser(app);
    let maxGap = 0;
    let last = Date.now();
    let running = true;
    const tick = async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, 5));
        const now = Date.now();
        maxGap = Math.max(maxGap, now - last);
        last = now;
      }
    };
    const ticker = tick();
    const started = Date.now();
    const results = await Promise.all([1, 2].map(() => timedLogin(app, alice.email, 'wrong-password')));
    const took = Date.now() - started;
    running = false;
    await ticker;
    for (const r of results) assert.equal(r.res.statusCode, 401);
    t.diagnostic(`two 12-round logins took ${took} ms; longest event-loop gap ${maxGap} ms`);
    assert.ok(took > 150, `the logins really cost 12 rounds (${took} ms)`);
    assert.ok(maxGap < took / 2, `the event loop was never blocked for a whole bcrypt run (gap ${maxGap} ms of ${took} ms)`);
  });
});
