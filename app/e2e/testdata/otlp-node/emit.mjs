// Emits a fixed set of log records through the OpenTelemetry JS logs SDK and one of its OTLP/HTTP
// exporters to a live service, then exits: 0 when every export succeeded, 1 otherwise (with the
// exporter's error on stderr). app/otlp_node_test.go runs it and reads the records back.
//
// Environment:
//   OTLP_LOGS_URL   the endpoint, e.g. http://127.0.0.1:4318/v1/logs
//   OTLP_EXPORTER   "http" (@opentelemetry/exporter-logs-otlp-http, OTLP JSON) or
//                   "proto" (@opentelemetry/exporter-logs-otlp-proto, protobuf)
//   OTLP_COMPRESSION "gzip" or "none"
//   OTLP_API_KEY    sent as "Authorization: Bearer <key>"
//   SERVICE_NAME    the resource's service.name
import { context, trace, TraceFlags } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { OTLPLogExporter as JSONExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchLogRecordProcessor, LoggerProvider } from '@opentelemetry/sdk-logs';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return v;
};

const kind = env('OTLP_EXPORTER');
const Exporter = { http: JSONExporter, proto: ProtoExporter }[kind];
if (!Exporter) {
  console.error(`OTLP_EXPORTER=${kind}: want http or proto`);
  process.exit(2);
}
const exporter = new Exporter({
  url: env('OTLP_LOGS_URL'),
  headers: { Authorization: `Bearer ${env('OTLP_API_KEY')}` },
  compression: env('OTLP_COMPRESSION'),
});

// Every export's result, as the processor receives it: the SDK logs a failed export and goes on,
// so the script keeps the results to decide its exit status.
const results = [];
const recording = {
  export(records, done) {
    exporter.export(records, (result) => {
      results.push({ records: records.length, result });
      done(result);
    });
  },
  forceFlush: () => exporter.forceFlush(),
  shutdown: () => exporter.shutdown(),
};

const provider = new LoggerProvider({
  resource: resourceFromAttributes({ 'service.name': env('SERVICE_NAME'), 'deployment.environment': 'test' }),
  processors: [new BatchLogRecordProcessor({ exporter: recording, scheduledDelayMillis: 60_000 })],
});
const logger = provider.getLogger('node-test', '0.2');

logger.emit({
  timestamp: new Date(1_700_000_000_001),
  severityNumber: SeverityNumber.INFO,
  severityText: 'INFO',
  body: 'string body',
  attributes: { 'http.route': '/orders', 'retries': 2, 'cached': true },
});
logger.emit({
  timestamp: new Date(1_700_000_000_002),
  severityNumber: SeverityNumber.ERROR,
  body: { order: 'o-1', qty: 3 },
  attributes: { 'user.id': 'u-7' },
});
logger.emit({
  timestamp: new Date(1_700_000_000_003),
  severityText: 'WARN',
  eventName: 'cache.miss',
  body: 'severity text only',
  attributes: { 'enduser.id': 'u-8' },
});
const inSpan = trace.setSpanContext(context.active(), {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
});
logger.emit({
  timestamp: new Date(1_700_000_000_004),
  severityNumber: SeverityNumber.DEBUG,
  body: 'in a span',
  context: inSpan,
});

let failed = false;
try {
  await provider.forceFlush();
} catch (err) {
  console.error(`flush: ${err?.stack ?? err}`);
  failed = true;
}
await provider.shutdown();

for (const { records, result } of results) {
  if (result.code !== 0) { // ExportResultCode.SUCCESS
    console.error(`export of ${records} records failed: ${result.error?.stack ?? result.error}`);
    failed = true;
  }
}
const sent = results.reduce((n, r) => n + r.records, 0);
if (sent !== 4) {
  console.error(`${sent} records exported, want 4`);
  failed = true;
}
console.log(`${kind}: ${results.length} export(s), ${sent} records, ${failed ? 'FAILED' : 'ok'}`);
process.exit(failed ? 1 : 0);
