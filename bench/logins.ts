/** The logins phase: logins saturating bcrypt, and GET /auth/me at the same time on the same service. */
import { elapsed, log } from './context.ts';
import { PASSWORD } from './options.ts';
import { f1, failures, summaryLine } from './report.ts';
import { job, type Bench } from './scenario.ts';

export async function loginsPhase(b: Bench): Promise<void> {
  const { ctx, rows, targets } = b;
  log(`[${elapsed(ctx)}] POST /auth/login (8 connections) beside GET /auth/me (${ctx.opts.connections})`);
  const credentials = b.users.map((u) => ({ username: u.email, password: PASSWORD }));
  const [logins, meUnderLogins] = await b.loader.run([
    job(b, 'POST /auth/login', ctx.serviceUrl, { kind: 'login', path: '/api/v1/auth/login', credentials }, { connections: 8 }),
    job(b, 'GET /auth/me (beside logins)', ctx.serviceUrl, b.reads['GET /auth/me'].service),
  ]);
  rows.push({ name: 'POST /auth/login', service: logins }, { name: '/auth/me beside logins', service: meUnderLogins });
  log(`  logins ${f1(logins.okRps)}/s ${summaryLine(logins.latency)}; /auth/me ${Math.round(meUnderLogins.okRps)} req/s ${summaryLine(meUnderLogins.latency)}`);
  targets.push({
    name: '/auth/me p99 while logins saturate bcrypt',
    informative: true,
    value: `${f1(meUnderLogins.latency.p99)} ms`,
    target: '< 50 ms',
    pass: meUnderLogins.latency.p99 < 50 && failures(meUnderLogins) === '',
  });
}
