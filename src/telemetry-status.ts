import type { Config } from './config.ts';
import { list } from './config-values.ts';

/** Tracing on or off and where spans go, read from the SDK's own variables without loading it. */
interface TracingStatus {
  enabled: boolean;
  exporters?: string[];
  protocol?: string;
  endpoint?: string;
  serviceName?: string;
}

export function tracingStatus(config: Pick<Config, 'otelEndpoint' | 'otelServiceName'>, env: Record<string, string | undefined> = process.env): TracingStatus {
  if (!config.otelEndpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return { enabled: false };
  const exporters = list(env.OTEL_TRACES_EXPORTER);
  if (exporters[0] === 'none') return { enabled: false, exporters };
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf';
  const chosen = exporters.length > 0 ? exporters : ['otlp'];
  // the OTLP traces endpoint as the SDK resolves it
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || (base ? (protocol === 'grpc' ? base : `${base.replace(/\/+$/, '')}/v1/traces`) : undefined);
  return {
    enabled: true,
    exporters: chosen,
    ...(chosen.includes('otlp') ? { protocol, endpoint } : {}),
    serviceName: config.otelServiceName,
  };
}

export function tracingStatusLine(s: TracingStatus): string {
  if (!s.enabled) {
    return s.exporters?.[0] === 'none'
      ? 'tracing off: OTEL_TRACES_EXPORTER is none'
      : 'tracing off: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318) to export spans (docs/tracing.md)';
  }
  const where = s.endpoint ? `OTLP ${s.protocol} to ${s.endpoint}` : '';
  const others = (s.exporters ?? []).filter((e) => e !== 'otlp');
  const to = [where, ...others.map((e) => `the ${e} exporter`)].filter((x) => x !== '').join(' and ');
  return `tracing on: spans of service ${s.serviceName} exported via ${to}`;
}
