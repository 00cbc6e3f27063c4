// What the activities get from the worker that builds them (STYLE habit 3): the API's address and
// key when the worker overrides the manifest, the environment the key is read from, a clock, and
// storage. Secrets come only from here, never from activity inputs (which land in history).
import { countingOutcomes } from '../metrics/outcome-counts.js';
import { NO_METRICS, type WorkerMetrics } from '../metrics/worker-metrics.js';
import { ReferenceHost } from '../references/host.js';
import type { ReferenceServer } from '../references/server.js';
import { RunStateRouter, type RunStateStore } from '../runstate/index.js';
import { ResultStores } from '../storage/open-store.js';
import type { ResultStore } from '../storage/result-store.js';
import type { S3Location } from '../storage/s3-location.js';

export interface ActivityDeps {
  /** Overrides the manifest's `api.base_url` (e.g. the built-in emulator, PIXELMILL_API_BASE_URL). */
  apiBaseUrl?: string;
  /** Overrides the key read from the environment. Never logged. */
  apiKey?: string;
  /**
   * Overrides the webhook secret read from the environment (the manifest's `webhooks.secret_env`):
   * submits give it to a provider that signs with the caller's secret (BFL). Never logged.
   */
  webhookSecret?: string;
  /** Where `api_key_env` and PIXELMILL_API_KEY are looked up; default `process.env`. */
  env?: NodeJS.ProcessEnv;
  /** Epoch milliseconds; default `Date.now`. */
  now?: () => number;
  /**
   * How many worker processes share the API rate, when the caller knows (the embedded run is the
   * only one); default: counted from the server's pollers of the API queue (api-fleet.ts).
   */
  apiWorkers?: number;
  /**
   * Storage for a run's output: its local directory, or its S3 location when the plan has one.
   * Default: a LocalResultStore rooted at the directory, or an S3ResultStore (credentials from
   * the standard AWS chain, read from `env`).
   */
  resultStore?: (outputDir: string, objectStore?: S3Location) => ResultStore;
  /**
   * Where a run's plan, outcomes and submit journal are kept; default: each run's own store, local
   * files or objects under its S3 output (RunStateRouter, S3 credentials read from `env`).
   */
  runState?: RunStateStore;
  /** The embedded run's server of local reference images (references/server.ts). */
  referenceServer?: ReferenceServer;
  /** Where the worker's own metrics go (metrics/serve.ts); default: nowhere. */
  metrics?: WorkerMetrics;
}

export interface ResolvedDeps {
  apiWorkers?: number;
  apiBaseUrl?: string;
  apiKey?: string;
  webhookSecret?: string;
  env: NodeJS.ProcessEnv;
  now: () => number;
  resultStore: (outputDir: string, objectStore?: S3Location) => ResultStore;
  runState: RunStateStore;
  /** URLs for local reference images (references/host.ts). */
  references: ReferenceHost;
  metrics: WorkerMetrics;
  /** Releases the default stores' connections (S3 clients); call on worker shutdown. */
  closeStores: () => void;
}

export function resolveDeps(deps: ActivityDeps): ResolvedDeps {
  const env = deps.env ?? process.env;
  const stores = new ResultStores(env);
  const stored = deps.runState ?? new RunStateRouter({ s3: { env } });
  // The report's counts as the worker records them: items, images, bytes, check failures.
  const runState = deps.metrics ? countingOutcomes(stored, deps.metrics) : stored;
  const now = deps.now ?? Date.now;
  const references = new ReferenceHost({
    env,
    now,
    ...(deps.referenceServer ? { server: deps.referenceServer } : {}),
  });
  const resolved: ResolvedDeps = {
    env,
    now,
    resultStore:
      deps.resultStore ??
      ((outputDir, objectStore) => stores.open(objectStore ? { outputDir, objectStore } : { outputDir })),
    runState,
    references,
    metrics: deps.metrics ?? NO_METRICS,
    closeStores: () => {
      stores.close();
      references.close();
      if (stored instanceof RunStateRouter) stored.close();
    },
  };
  if (deps.apiBaseUrl !== undefined) resolved.apiBaseUrl = deps.apiBaseUrl;
  if (deps.apiWorkers !== undefined) resolved.apiWorkers = deps.apiWorkers;
  if (deps.apiKey !== undefined) resolved.apiKey = deps.apiKey;
  if (deps.webhookSecret !== undefined) resolved.webhookSecret = deps.webhookSecret;
  return resolved;
}
