import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import bcrypt from 'bcrypt';
import { buildTestApp, createUser } from '../../helpers/app.ts';

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

  it('bcrypt runs on the thread pool: the event loop keeps turning during a 12-round login', { timeout: 60000 }, async (t) => {
    const app = await buildTestApp(t, { bcryptRounds: 12 });
    const alice = await createUser(app);
    // Counted, not timed: a comparison on the event loop would hold every timer until it ends, so
    // none would fire while the logins are in flight. (A 12-round comparison takes a few hundred ms.)
    let ticks = 0;
    let running = true;
    const ticker = (async () => {
      while (running) {
        await new Promise((r) => setTimeout(r, 5));
        ticks++;
      }
    })();
    const inFlight = Promise.all([1, 2].map(() => app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { username: alice.email, password: 'wrong-password' } })));
    const ticksAtStart = ticks;
    const results = await inFlight;
    const during = ticks - ticksAtStart;
    running = false;
    await ticker;
    for (const r of results) assert.equal(r.statusCode, 401);
    t.diagnostic(`timer ticks while two 12-round logins ran: ${during}`);
    assert.ok(during >= 3, `the event loop turned while bcrypt ran (${during} ticks)`);
  });
});
