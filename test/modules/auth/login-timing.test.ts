import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcrypt';
import type { FastifyInstance } from 'fastify';
import { buildTestApp, createUser, errorBody } from '../../helpers/app.ts';

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
  it('unknown e-mail: one bcrypt comparison at the configured cost, and no hashing on the request path', async (t) => {
    const app = await buildTestApp(t, { bcryptRounds: 6 });
    const alice = await createUser(app);
    const hash = t.mock.method(bcrypt, 'hash');
    const compare = t.mock.method(bcrypt, 'compare');
    const cases: [string, string][] = [
      ['nobody-first@example.com', 'wrong-password'], // the first unknown e-mail this process sees
      [alice.email, 'wrong-password'],
      [alice.email, 'x'.repeat(100)], // too long for bcrypt: compared against the dummy, refused
      ['nobody-else@example.com', 'wrong-password'],
    ];
    for (const [username, password] of cases) {
      hash.mock.resetCalls();
      compare.mock.resetCalls();
      const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username, password } });
      assert.equal(res.statusCode, 401);
      assert.equal(hash.mock.callCount(), 0, `no bcrypt.hash while answering ${username}`);
      assert.equal(compare.mock.callCount(), 1, `exactly one comparison for ${username}`);
      const against = compare.mock.calls[0].arguments[1] as string;
      assert.match(against, /^\$2[aby]\$06\$[./A-Za-z0-9]{53}$/, 'a well-formed hash of the configured cost');
    }
  });

  it('unknown e-mail takes as long as a wrong password (real cost: 10 rounds)', { timeout: 60000 }, async (t) => {
    const app = await buildTestApp(t, { bcryptRounds: 10 });
    const alice = await createUser(app);
    // A shared, loaded machine can distort one round; a real difference shows in every round.
    const rounds: string[] = [];
    let equal = false;
    for (let round = 0; round < 3 && !equal; round++) {
      const wrong: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 9; i++) {
        const w = await timedLogin(app, alice.email, `wrong-password-${i}`);
        const u = await timedLogin(app, `nobody${i}@example.com`, `wrong-password-${i}`);
        assert.deepEqual(errorBody(w.res), errorBody(u.res));
        wrong.push(w.ms);
        unknown.push(u.ms);
      }
      // the fastest run is the intrinsic cost; the others carry the noise
      const [mw, mu] = [Math.min(...wrong), Math.min(...unknown)];
      rounds.push(`wrong ${mw.toFixed(1)} / unknown ${mu.toFixed(1)} ms (medians ${median(wrong).toFixed(1)} / ${median(unknown).toFixed(1)})`);
      assert.ok(mw > 20, `a 10-round comparison really ran (${mw.toFixed(1)} ms)`);
      equal = mu / mw > 0.6 && mu / mw < 1.6;
    }
    t.diagnostic(rounds.join('; '));
    assert.ok(equal, `unknown e-mail vs wrong password differ in every round: ${rounds.join('; ')}`);
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
