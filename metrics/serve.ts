// A worker process's Prometheus endpoint: the Temporal SDK's runtime serves its own metrics (task
// latencies, schedule-to-start, slots, sticky cache, requests to the server) at
// http://HOST:PORT/metrics, and pixelmill's (worker-metrics.ts) are recorded on the same runtime's
// meter, so one scrape gets both. The runtime is a process-wide singleton that must be installed
// before the first connection or Worker: the worker command calls this first.
//
// Metrics are never worth a run: when the endpoint cannot be served (a port in use), the worker
// says so in one line and runs without them.
import { Runtime } from '@temporalio/worker';
import { WorkerMetrics } from './worker-metrics.js';

export const DEFAULT_METRICS_HOST = '127.0.0.1';

export interface MetricsEndpoint {
  host: string;
  port: number;
}

export type ServedMetrics =
  { served: true; url: string; metrics: WorkerMetrics } | { served: false; reason: string };

/** `host:port` as the exporter binds it: an IPv6 address in brackets. */
export function bindAddress({ host, port }: MetricsEndpoint): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * Installs the SDK's runtime with a Prometheus exporter on `endpoint`; `tags` go on every metric,
 * the SDK's and pixelmill's. Counters end in `_total` and durations are in seconds, as Prometheus
 * names them. When the exporter cannot start, nothing is installed (the runtime the worker then
 * makes by itself has no exporter) and the reason comes back.
 */
export function serveWorkerMetrics(
  endpoint: MetricsEndpoint,
  tags: Record<string, string> = {},
): ServedMetrics {
  const address = bindAddress(endpoint);
  try {
    const runtime = Runtime.install({
      telemetryOptions: {
        metrics: {
          prometheus: { bindAddress: address, countersTotalSuffix: true, useSecondsForDurations: true },
          globalTags: tags,
        },
      },
    });
    return {
      served: true,
      url: `http://${address}/metrics`,
      metrics: new WorkerMetrics(runtime.metricMeter),
    };
  } catch (error) {
    return { served: false, reason: whyNotServed(address, error) };
  }
}

/** The exporter's refusal in the user's terms (the SDK says `Address already in use (os error 98)`). */
function whyNotServed(address: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/address already in use|os error 98|EADDRINUSE/i.test(message)) return `${address} is in use`;
  if (/cannot assign requested address|os error 99/i.test(message))
    return `${address} is not an address of this machine`;
  if (/already been (installed|instantiated)/i.test(message))
    return 'the Temporal runtime was set up before the metrics (a bug: please report it)';
  return `${address}: ${message}`;
}
