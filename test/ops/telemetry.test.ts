import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'undici';
import { defer, waitFor } from '../helpers/app.ts';
import { ADMIN_EMAIL, ADMIN_PASSWORD, freePort, SDK_LOAD_PROBE, SDK_LOADED, serverEnv, start, untilHealthy, type Proc } from '../helpers/server-process.ts';
import { startSlowReceiver, type Envelope } from '../modules/outbound-webhooks/outbound-webhooks.helpers.ts';

/** One span as an OTLP/HTTP JSON export carries it, with the resource it came from. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  links: { traceId: string; spanId: string }[];
}

const SPAN_KIND = { SERVER: 2, CLIENT: 3, CONSUMER: 5 } as const;

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

function attributesOf(list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, value } of list ?? []) {
    out[key] = value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.boolValue ?? value.doubleValue));
  }
  return out;
}

/** A real OTLP/HTTP receiver: accepts POST /v1/traces in the JSON encoding and keeps every span. */
async function startOtlpReceiver(): Promise<{ url: string; spans: ExportedSpan[]; close(): Promise<void> }> {
  const spans: ExportedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      const body = JSON.parse((req.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw) : raw).toString('utf8')) as {
        resourceSpans: {
          resource?: { attributes?: { key: string; value: AnyValue }[] };
          scopeSpans: {
            spans: {
              traceId: string;
              spanId: string;
              parentSpanId?: string;
              name: string;
              kind: number;
              attributes?: { key: string; value: AnyValue }[];
              links?: { traceId: string; spanId: string }[];
            }[];
          }[];
        }[];
      };
      for (const rs of body.resourceSpans) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans) {
          for (const s of ss.spans) spans.push({ ...s, attributes: attributesOf(s.attributes), resource, links: s.links ?? [] });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Lines a process logged (pino's JSON lines on stdout), parsed. */
function logLines(p: Proc): { level: number; msg: string; [k: string]: unknown }[] {
  return p
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string });
}

async function call(base: string, method: 'GET' | 'POST', path: string, token: string | undefined, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await request(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

// With PostgreSQL the API and the worker run as separate processes (the path the trace must cross);
// on the embedded database one process plays both roles.
const split = Boolean(process.env.TEST_DATABASE_URL);

describe(`OpenTelemetry: one trace from POST /orders to the subscriber (${split ? 'API and worker processes' : 'one process'})`, { timeout: 240000 }, () => {
  it('the delivery carries the traceparent of the order request, and every process exports spans of that trace', async (t) => {
    const otlp = await startOtlpReceiver();
    defer(t, () => otlp.close());
    const subscriber = await startSlowReceiver();
    defer(t, () => subscriber.close());
    // the first delivery fails: its retry, a job of its own, is attempt 2
    subscriber.respond = (_hit, i) => (i === 0 ? { status: 500, body: 'not yet' } : { status: 200, body: 'ok' });
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_RETRY_SCHEDULE: '0.2',
      BCRYPT_ROUNDS: '4',
    };

    const apiPort = await freePort();
    const base = `http://127.0.0.1:${apiPort}`;
    const apiEnv = await serverEnv(t, { ...otel, PORT: String(apiPort), ROLE: split ? 'api' : 'all', LOG_LEVEL: 'info' });
    const processes: Proc[] = [start(t, 'src/server.ts', apiEnv, SDK_LOAD_PROBE)];
    await untilHealthy(base, processes[0]);
    // the probe sees the SDK load when the endpoint is set (test/ops/server-process.test.ts: and not otherwise)
    assert.ok(processes[0].stderr().includes(SDK_LOADED), 'the SDK is loaded');
    // one start-up line says tracing is on and where the spans go
    const status = logLines(processes[0]).filter((l) => l.msg.startsWith('tracing '));
    assert.equal(status.length, 1, processes[0].stdout());
    assert.equal(status[0].msg, `tracing on: spans of service order-account-service exported via OTLP http/json to ${otlp.url}/v1/traces`);
    if (split) {
      const workerEnv = await serverEnv(t, { ...otel, PORT: String(await freePort()), ROLE: 'worker', LOG_LEVEL: 'info' });
      workerEnv.DATABASE_URL = apiEnv.DATABASE_URL;
      const worker = start(t, 'src/server.ts', workerEnv);
      processes.push(worker);
      await waitFor(async () => {
        if (worker.child.exitCode !== null) throw new Error(`worker exited: ${worker.stderr()}`);
        return worker.stdout().includes('worker started') ? true : undefined;
      }, 30000);
    }

    const login = await call(base, 'POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD });
    assert.equal(login.status, 200);
    const token = String(login.json.access_token);
    const product = await call(base, 'POST', '/api/v1/products', token, { sku: 'OTEL-1', name: 'Traced widget', price: 3, stock: 5 });
    assert.equal(product.status, 201);
    // an administrator's subscription receives every order's events
    const subscription = await call(base, 'POST', '/api/v1/webhooks/subscriptions', token, { url: subscriber.url, events: ['order.created', 'order.status_changed'] });
    assert.equal(subscription.status, 201);

    const order = await call(base, 'POST', '/api/v1/orders', token, { items: [{ product_id: product.json.id, quantity: 1 }], shipping_address: '1 Trace Road' });
    assert.equal(order.status, 201);
    const orderId = order.json.id as number;

    // the subscriber gets order.created (queued by the request) and the completion (queued by the order's job)
    const deliveries = await waitFor(async () => {
      const hits = subscriber.hits.filter((h) => (JSON.parse(h.body) as Envelope).data.order_id === orderId);
      return hits.some((h) => (JSON.parse(h.body) as Envelope).data.status === 'completed') ? hits : undefined;
    }, 60000);
    const traceparents = deliveries.map((h) => String(h.headers.traceparent));
    for (const tp of traceparents) assert.match(tp, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    // the request's server span, named after its route, with its status
    const orderSpan = await waitFor(async () =>
      otlp.spans.find((s) => s.kind === SPAN_KIND.SERVER && s.name === 'POST /api/v1/orders' && s.attributes['http.response.status_code'] === 201),
    );
    assert.equal(orderSpan.attributes['http.route'], '/api/v1/orders');
    const traceId = orderSpan.traceId;
    for (const tp of traceparents) assert.equal(tp.split('-')[1], traceId, 'each delivery continues the trace of POST /orders');

    // the spans of that trace, once the processes have exported the last of them
    const inTrace = await waitFor(async () => {
      const spans = otlp.spans.filter((s) => s.traceId === traceId);
      const ids = new Set(spans.map((s) => s.spanId));
      const deliveredBy = traceparents.map((tp) => tp.split('-')[2]);
      return deliveredBy.every((id) => ids.has(id)) && spans.some((s) => s.name === 'process order-process') ? spans : undefined;
    }, 30000);

    // each delivery's traceparent names the outgoing HTTP call's own client span
    for (const tp of traceparents) {
      const client = inTrace.find((s) => s.spanId === tp.split('-')[2]);
      assert.equal(client?.kind, SPAN_KIND.CLIENT);
      assert.equal(client?.attributes['http.request.method'], 'POST');
      assert.equal(client?.attributes['url.full'], subscriber.url);
    }
    // the job runs, with their queue and attempt
    const processOrder = inTrace.find((s) => s.name === 'process order-process');
    assert.equal(processOrder?.kind, SPAN_KIND.CONSUMER);
    assert.equal(processOrder?.attributes['job.queue'], 'order-process');
    assert.equal(processOrder?.attributes['job.attempt'], 1);
    // each delivery attempt is a child of the span that wrote its event (the request, or the order's
    // job), never of the delivery before it; the retry reports attempt 2 and links to what sent it
    const deliverSpans = inTrace.filter((s) => s.name === 'process webhook-deliver');
    const writers = new Set([orderSpan.spanId, ...inTrace.filter((s) => s.name === 'process order-process').map((s) => s.spanId)]);
    for (const d of deliverSpans) assert.ok(writers.has(d.parentSpanId ?? ''), `delivery span ${d.spanId} hangs under ${d.parentSpanId}`);
    const created = deliverSpans.filter((d) => d.attributes['webhook.event.type'] === 'order.created');
    assert.deepEqual(created.map((d) => d.attributes['job.attempt']).sort(), [1, 2]);
    for (const d of created) assert.equal(d.parentSpanId, orderSpan.spanId, 'order.created belongs to the request that created the order');
    const retry = created.find((d) => d.attributes['job.attempt'] === 2)!;
    const firstAttempt = created.find((d) => d.attributes['job.attempt'] === 1)!;
    assert.deepEqual(retry.links.map((l) => l.spanId), [firstAttempt.spanId], 'the retry links to the attempt that sent it');
    assert.equal(retry.attributes['order.id'], orderId);
    assert.match(String(retry.attributes['webhook.message.id']), /^msg_/);

    // the admin trace gives the trace id to look the order up with, in both versions
    for (const version of ['v1', 'v2']) {
      const story = await call(base, 'GET', `/api/${version}/admin/orders/${orderId}/trace`, token);
      assert.equal(story.status, 200);
      assert.equal(story.json.trace_id, traceId);
      const messages = (story.json.deliveries as { messages: { trace_id: string }[] }[]).flatMap((d) => d.messages);
      assert.ok(messages.length >= 2);
      for (const m of messages) assert.equal(m.trace_id, traceId);
    }

    // spans from every process share the trace: the API's request, the worker's jobs and deliveries
    const pids = processes.map((p) => p.child.pid);
    const pidsInTrace = new Set(inTrace.map((s) => s.resource['process.pid']));
    for (const pid of pids) assert.ok(pidsInTrace.has(pid), `process ${pid} exported spans of the trace`);
    assert.equal(orderSpan.resource['process.pid'], pids[0]);
    assert.equal(processOrder?.resource['process.pid'], pids.at(-1));
    assert.equal(orderSpan.resource['service.name'], 'order-account-service');

    // with PostgreSQL, the statements of the request and of the jobs are spans of the trace too
    if (split) {
      const statements = inTrace.filter((s) => s.attributes['db.system.name'] === 'postgresql' && s.attributes['db.query.text'] !== undefined);
      assert.ok(statements.some((s) => s.resource['process.pid'] === pids[0]), 'the API process traced its statements');
      assert.ok(statements.some((s) => s.resource['process.pid'] === pids[1]), 'the worker traced its statements');
      // named as the pg instrumentation names them, by operation and database, never by a prepared statement's id
      const database = new URL(apiEnv.DATABASE_URL!).pathname.slice(1);
      for (const s of statements) {
        assert.match(s.name, new RegExp(`^pg\\.query:[A-Z]+ ${database}$`), String(s.attributes['db.query.text']));
        // (the test database's own name starts with oas_ too)
        assert.doesNotMatch(s.name, /^pg\.query:oas_/);
      }
      const names = new Set(statements.map((s) => s.name));
      assert.ok(names.has(`pg.query:INSERT ${database}`) || names.has(`pg.query:WITH ${database}`), [...names].join(' | '));
      assert.ok(names.has(`pg.query:SELECT ${database}`), [...names].join(' | '));
    }

    for (const p of processes) p.child.kill('SIGTERM');
    for (const p of processes) assert.deepEqual(await p.exited, { code: 0, signal: null }, p.stderr());
  });

  it('with the collector refusing every export, the failures are logged: the first at once, then at most a line a minute', async (t) => {
    // a real collector that answers every export 400, a failure the exporter does not retry
    const collector = await startSlowReceiver('');
    collector.respond = () => ({ status: 400 });
    defer(t, () => collector.close());
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = await serverEnv(t, {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      OTEL_EXPORTER_OTLP_TIMEOUT: '1000',
      PORT: String(port),
      LOG_LEVEL: 'info',
      BCRYPT_ROUNDS: '4',
    });
    const proc = start(t, 'src/server.ts', env);
    await untilHealthy(base, proc);
    assert.ok(logLines(proc).some((l) => l.msg === `tracing on: spans of service order-account-service exported via OTLP http/protobuf to ${collector.url}/v1/traces`));
    // a request makes spans to export
    assert.equal((await call(base, 'POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: ADMIN_PASSWORD })).status, 200);
    const line = await waitFor(async () => logLines(proc).find((l) => l.msg.startsWith('tracing: ')), 60000);
    assert.equal(line.level, 40, 'a warning');
    assert.equal(line.endpoint, `${collector.url}/v1/traces`);
    assert.ok(Number(line.failures) >= 1);
    assert.ok(typeof line.error === 'string' && line.error.length > 0);
    assert.match(line.msg, /span exports? to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed/);
    // more failures within the minute, each waited for: the span processor exports one batch at a
    // time and reports a batch's failure before the next batch leaves, so once an export reaches
    // the collector, every export before it has failed and been counted
    for (let i = 0; i < 3; i++) {
      const before = collector.hits.length;
      await call(base, 'POST', '/api/v1/auth/login', undefined, { username: ADMIN_EMAIL, password: 'wrong-password' });
      await waitFor(async () => (collector.hits.length > before ? true : undefined), 60000);
    }
    assert.equal(logLines(proc).filter((l) => l.msg.startsWith('tracing: ')).length, 1, 'no line per failed export');
    proc.child.kill('SIGKILL');
  });
});
