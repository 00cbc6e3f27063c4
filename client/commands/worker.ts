// `pixelmill worker [--rps-fallback N] [--identity ID]`: runs pixelmill's workers as their own
// process against the cluster named by Temporal's envconfig (TEMPORAL_ADDRESS, ...), until SIGINT
// or SIGTERM, then drains them. Start as many as you like: the API rate limit is the task
// queue's, shared by all of them. Without a configured cluster, `pixelmill run` runs the workers.
import { InvalidArgumentError, type Command } from 'commander';
import { createActivityRuntime } from '../../activities/index.js';
import { UserError } from '../../common/errors.js';
import { API_TASK_QUEUE, TRANSFER_TASK_QUEUE, WORKFLOW_TASK_QUEUE } from '../../common/names.js';
import { connectWorkerConnection, resolveTemporalTarget } from '../../temporal/connection.js';
import { createPixelmillWorkers } from '../../worker/workers.js';
import { examples } from './with-run.js';

interface WorkerCommandOptions {
  rpsFallback?: number;
  identity?: string;
}

function parseRate(value: string): number {
  const rate = Number(value);
  if (value.trim() === '' || !Number.isFinite(rate) || rate <= 0) {
    throw new InvalidArgumentError('expected a positive number of requests per second');
  }
  return rate;
}

/** Checked here so that a typo fails at start, not in the first activity of some run. */
function apiBaseUrlFromEnv(env: NodeJS.ProcessEnv): string | undefined {
  const value = env.PIXELMILL_API_BASE_URL;
  if (!value) return undefined;
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) {
    throw new UserError('config_invalid', `PIXELMILL_API_BASE_URL=${value} is not an http(s) URL`);
  }
  return value;
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
    .addHelpText(
      'after',
      examples(
        'TEMPORAL_ADDRESS=temporal.internal:7233 PIXELMILL_API_KEY=... pixelmill worker',
        'TEMPORAL_PROFILE=prod pixelmill worker --identity render-box-2',
      ) +
        "\n\nRun one per host or container; the run's requests_per_second is shared by all of them." +
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
  const apiBaseUrl = apiBaseUrlFromEnv(process.env);
  const connection = await connectWorkerConnection(target);
  const runtime = createActivityRuntime({
    apiBaseUrl,
    apiKey: process.env.PIXELMILL_API_KEY || undefined,
    env: process.env,
  });
  try {
    const workers = await createPixelmillWorkers({
      connection,
      namespace: target.namespace,
      activities: runtime.activities,
      ...(options.rpsFallback !== undefined ? { fallbackRequestsPerSecond: options.rpsFallback } : {}),
      ...(options.identity !== undefined ? { identity: options.identity } : {}),
    });
    const stop = (): void => {
      process.stdout.write('pixelmill worker: stopping, letting in-flight activities finish\n');
      workers.shutdown();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    process.stdout.write(
      `pixelmill worker connected to ${target.display}; polling ` +
        `${WORKFLOW_TASK_QUEUE}, ${API_TASK_QUEUE}, ${TRANSFER_TASK_QUEUE}\n`,
    );
    try {
      await workers.run();
    } finally {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
    }
    process.stdout.write('pixelmill worker stopped\n');
  } finally {
    await runtime.close();
    await connection.close();
  }
}
