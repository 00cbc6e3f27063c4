// `pixelmill worker [--api-key-env NAME] [--rps-fallback N] [--identity ID] [--metrics-port N]`: runs pixelmill's
// workers as their own process against the cluster named by Temporal's envconfig
// (TEMPORAL_ADDRESS, ...), until SIGINT or SIGTERM, then drains them. A worker serves the runs of
// one API account, the base URL and key of its environment, and no other. Start as many as you
// like: the API rate limit is the account's task queue's, shared by all of them. Without a
// configured cluster, `pixelmill run` runs the workers. With --metrics-port it serves Prometheus
// metrics, the SDK's and pixelmill's (metrics/serve.ts, docs/metrics.md).
import { InvalidArgumentError, Option, type Command } from 'commander';
import { createActivityRuntime } from '../../activities/index.js';
import { UserError } from '../../common/errors.js';
import { FALLBACK_API_KEY_ENV } from '../../activities/api-clients.js';
import { apiAccountId, displayBaseUrl } from '../../common/api-account.js';
import { taskQueuesOf } from '../../common/names.js';
import { DEFAULT_METRICS_HOST, serveWorkerMetrics } from '../../metrics/serve.js';
import type { WorkerMetrics } from '../../metrics/worker-metrics.js';
import { connectWorkerConnection, resolveTemporalTarget } from '../../temporal/connection.js';
import { createPixelmillWorkers } from '../../worker/workers.js';
import { examples } from './with-run.js';

interface WorkerCommandOptions {
  rpsFallback?: number;
  identity?: string;
  apiKeyEnv: string;
  metricsPort?: number;
  metricsHost: string;
}

function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value.trim()) || port < 1 || port > 65535) {
    throw new InvalidArgumentError('expected a TCP port, 1 to 65535');
  }
  return port;
}

function parseRate(value: string): number {
  const rate = Number(value);
  if (value.trim() === '' || !Number.isFinite(rate) || rate <= 0) {
    throw new InvalidArgumentError('expected a positive number of requests per second');
  }
  return rate;
}

/** The account this worker serves; checked here so that a typo fails at start, not in some run. */
function workerApi(env: NodeJS.ProcessEnv, keyEnv: string): { baseUrl: string; apiKey: string } {
  const baseUrl = env.PIXELMILL_API_BASE_URL;
  if (!baseUrl) {
    throw new UserError(
      'api_not_configured',
      `a worker serves one API account: set PIXELMILL_API_BASE_URL and ${keyEnv} (its key) for it`,
    );
  }
  if (!URL.canParse(baseUrl) || !/^https?:$/.test(new URL(baseUrl).protocol)) {
    throw new UserError('config_invalid', `PIXELMILL_API_BASE_URL=${baseUrl} is not an http(s) URL`);
  }
  const apiKey = env[keyEnv];
  if (!apiKey)
    throw new UserError('api_key_missing', `no API key for ${displayBaseUrl(baseUrl)}: set ${keyEnv}`);
  return { baseUrl, apiKey };
}

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description(
      'run pixelmill workers against the Temporal cluster set by TEMPORAL_ADDRESS (or a temporal.toml profile)',
    )
    .option(
      '--rps-fallback <n>',
      'cap on API calls per second, only for servers that cannot take the run limit as task-queue config',
      parseRate,
    )
    .option('--identity <id>', 'worker identity shown in the Temporal UI (default pid@host)')
    .option(
      '--api-key-env <name>',
      "the variable holding the API key (a manifest's api.api_key_env)",
      FALLBACK_API_KEY_ENV,
    )
    .addOption(
      new Option('--metrics-port <port>', 'serve Prometheus metrics at http://HOST:PORT/metrics')
        .env('PIXELMILL_METRICS_PORT')
        .argParser(parsePort),
    )
    .addOption(
      new Option('--metrics-host <host>', 'the address the metrics are served on (0.0.0.0: every interface)')
        .env('PIXELMILL_METRICS_HOST')
        .default(DEFAULT_METRICS_HOST),
    )
    .addHelpText(
      'after',
      examples(
        'TEMPORAL_ADDRESS=temporal.internal:7233 PIXELMILL_API_BASE_URL=https://api.example PIXELMILL_API_KEY=... pixelmill worker',
        'TEMPORAL_PROFILE=prod pixelmill worker --api-key-env ACME_KEY --identity render-box-2',
        'pixelmill worker --metrics-port 9464 --metrics-host 0.0.0.0',
      ) +
        '\n\nA worker serves the runs of the API account (base URL and key) of its environment, and no other.' +
        "\nRun one per host or container; the run's requests_per_second is shared by all of them." +
        '\nSIGINT/SIGTERM stop polling and let in-flight activities finish.',
    )
    .action(async (options: WorkerCommandOptions) => runWorkers(options));
}

async function runWorkers(options: WorkerCommandOptions): Promise<void> {
  const target = await resolveTemporalTarget();
  if (target.mode === 'embedded') {
    throw new UserError(
      'worker_needs_cluster',
      'no Temporal cluster configured: workers run inside `pixelmill run` unless TEMPORAL_ADDRESS ' +
        '(or a TEMPORAL_PROFILE / temporal.toml profile) names one',
    );
  }
  const api = workerApi(process.env, options.apiKeyEnv);
  const account = apiAccountId(api.baseUrl, api.apiKey);
  const queues = taskQueuesOf(account);
  // Before the connection: the SDK's runtime, which serves the metrics, is made with the first one.
  const metrics = startMetrics(options, account);
  const connection = await connectWorkerConnection(target);
  const runtime = createActivityRuntime({
    apiBaseUrl: api.baseUrl,
    apiKey: api.apiKey,
    env: process.env,
    ...(metrics ? { metrics } : {}),
  });
  try {
    const workers = await createPixelmillWorkers({
      connection,
      namespace: target.namespace,
      queues,
      activities: runtime.activities,
      ...(options.rpsFallback !== undefined ? { fallbackRequestsPerSecond: options.rpsFallback } : {}),
      ...(options.identity !== undefined ? { identity: options.identity } : {}),
    });
    const stop = (): void => {
      process.stdout.write('pixelmill: worker stopping, letting in-flight activities finish\n');
      workers.shutdown();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    process.stdout.write(
      `pixelmill worker connected to ${target.display}; serving API account ${account} ` +
        `(${displayBaseUrl(api.baseUrl)}, key from ${options.apiKeyEnv}); polling ` +
        `${Object.values(queues).join(', ')}\n`,
    );
    try {
      await workers.run();
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    process.stdout.write('pixelmill: worker stopped\n');
  } finally {
    await runtime.close();
    await connection.close();
  }
}

/** The metrics endpoint when asked for; one line either way, and a worker without metrics when it cannot be served. */
function startMetrics(options: WorkerCommandOptions, account: string): WorkerMetrics | undefined {
  if (options.metricsPort === undefined) return undefined;
  const served = serveWorkerMetrics({ host: options.metricsHost, port: options.metricsPort }, { account });
  if (!served.served) {
    process.stderr.write(`pixelmill: metrics not served: ${served.reason}; the worker runs without them\n`);
    return undefined;
  }
  process.stdout.write(`pixelmill worker metrics at ${served.url}\n`);
  return served.metrics;
}
