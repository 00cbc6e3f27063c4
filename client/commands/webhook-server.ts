// `pixelmill webhook-server [--host H] [--port N] [--secret-env NAME]`: the webhook receiver as its
// own process, for runs on a Temporal cluster (TEMPORAL_ADDRESS, ...). It turns each signed
// `{webhook}/callback` into a signal to the shard that owns the task, until SIGINT or SIGTERM.
// Runs started with webhooks enabled give the API PIXELMILL_WEBHOOK_URL, this server's public address.
import type { Command } from 'commander';
import { UserError } from '../../common/errors.js';
import { connectClient, resolveTemporalTarget } from '../../temporal/connection.js';
import { DEFAULT_WEBHOOK_SECRET_ENV, webhookSecret } from '../../webhook/config.js';
import { startWebhookServer } from '../../webhook/server.js';
import { temporalSignaller } from '../../webhook/signal.js';
import { receiverVerifiers } from '../../webhook/verifiers.js';
import { untilStopSignal } from '../interrupt.js';
import { examples, parsePort } from './with-run.js';

interface WebhookServerCommandOptions {
  host: string;
  port: number;
  secretEnv: string;
}

const DEFAULT_PORT = 8788;

export function registerWebhookServerCommand(program: Command): void {
  program
    .command('webhook-server')
    .description(
      "receive the API's signed task webhooks and signal the runs on the Temporal cluster set by TEMPORAL_ADDRESS",
    )
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--port <port>', 'port to listen on, 0 for any free port', parsePort, DEFAULT_PORT)
    .option(
      '--secret-env <name>',
      "environment variable that holds the account's webhook secret",
      DEFAULT_WEBHOOK_SECRET_ENV,
    )
    .addHelpText(
      'after',
      examples(
        'TEMPORAL_ADDRESS=temporal.internal:7233 PIXELMILL_WEBHOOK_SECRET=... pixelmill webhook-server --host 0.0.0.0',
        'pixelmill webhook-server --port 9000 --secret-env IMAGE_API_WEBHOOK_SECRET',
      ) +
        "\n\nThe manifest's webhooks.public_url must reach this address; runs started elsewhere are signalled" +
        '\nthrough Temporal, so one receiver serves every run on the cluster.',
    )
    .action(async (options: WebhookServerCommandOptions) => serveWebhooks(options));
}

async function serveWebhooks(options: WebhookServerCommandOptions): Promise<void> {
  const target = await resolveTemporalTarget();
  if (target.mode === 'embedded') {
    throw new UserError(
      'webhook_server_needs_cluster',
      'no Temporal cluster configured: `pixelmill run` receives webhooks itself unless TEMPORAL_ADDRESS ' +
        '(or a TEMPORAL_PROFILE / temporal.toml profile) names one',
    );
  }
  const secret = webhookSecret(options.secretEnv);
  const { client, close } = await connectClient(target);
  try {
    const server = await startWebhookServer({
      signal: temporalSignaller(client),
      verifierFor: receiverVerifiers({ secret }),
      host: options.host,
      port: options.port,
      log: (line) => void process.stderr.write(`${line}\n`),
    });
    // Listening for the stop signals before saying it listens: whoever reads that line may stop it.
    const stopped = untilStopSignal();
    process.stdout.write(
      `pixelmill webhook-server listening on ${server.url}, signalling runs on ${target.display}\n`,
    );
    await stopped;
    await server.close();
    const { signalled, duplicate, unauthorized } = server.counts;
    process.stdout.write(
      `pixelmill: webhook-server stopped (${signalled} signalled, ${duplicate} duplicates, ${unauthorized} unauthorized)\n`,
    );
  } finally {
    await close();
  }
}
