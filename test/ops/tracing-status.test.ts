import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { tracingStatus, tracingStatusLine } from '../../src/telemetry-status.ts';

/** The start-up line about tracing reads the variables the OpenTelemetry SDK reads, as it reads them. */
describe('the start-up line about tracing', () => {
  const config = (endpoint?: string) => ({ otelEndpoint: endpoint, otelServiceName: 'order-account-service' });
  const line = (env: Record<string, string>) =>
    tracingStatusLine(tracingStatus(config(env.OTEL_EXPORTER_OTLP_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), env));

  it('off without an endpoint, saying how to turn it on', () => {
    assert.deepEqual(tracingStatus(config(), {}), { enabled: false });
    assert.match(line({}), /^tracing off: set OTEL_EXPORTER_OTLP_ENDPOINT/);
  });

  it('the base endpoint gets /v1/traces over HTTP, as is over gRPC; the traces-only endpoint is used as is', () => {
    assert.equal(
      line({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }),
      'tracing on: spans of service order-account-service exported via OTLP http/protobuf to http://collector:4318/v1/traces',
    );
    assert.equal(
      line({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      'tracing on: spans of service order-account-service exported via OTLP grpc to http://collector:4317',
    );
    assert.equal(
      line({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example.com/traces', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json' }),
      'tracing on: spans of service order-account-service exported via OTLP http/json to https://otlp.example.com/traces',
    );
  });

  it('OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none turn it off; another exporter is named', () => {
    assert.match(line({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' }), /^tracing off/);
    assert.equal(line({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' }), 'tracing off: OTEL_TRACES_EXPORTER is none');
    assert.equal(
      line({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'otlp,console' }),
      'tracing on: spans of service order-account-service exported via OTLP http/protobuf to http://c:4318/v1/traces and the console exporter',
    );
  });
});
