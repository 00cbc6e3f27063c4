// The receiver inside `pixelmill run` (embedded mode): on 127.0.0.1, on PIXELMILL_WEBHOOK_PORT
// when set (a tunnel's target), else on the port it had last time (kept in .pixelmill/webhook.json)
// so that a run resumed after a restart, whose shards still hand out the old address, keeps getting
// its webhooks.
import { randomBytes } from 'node:crypto';
import { readJsonFile, writeJsonFile } from '../common/state-file.js';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { UserError } from '../common/errors.js';
import { webhookSecret } from './config.js';
import { webhookBaseUrl } from './route.js';
import type { ProviderName } from '../providers/types.js';
import { receiverVerifiers, type ReceiverKeys } from './verifiers.js';
import { startWebhookServer, type RunningWebhookServer } from './server.js';
import { temporalSignaller } from './signal.js';

export interface EmbeddedReceiver {
  server: RunningWebhookServer;
  /** The run's `webhookBaseUrl`: the public address when configured, else the local one. */
  baseUrl: string;
}

/**
 * The secret of an embedded run. Against the built-in emulator, which this process configures, a
 * fresh random one serves when the environment has none; a real service's secret must be given.
 */
export function embeddedWebhookSecret(secretEnv: string, emulated: boolean, env = process.env): string {
  if (emulated && !env[secretEnv]) return randomBytes(32).toString('hex');
  return webhookSecret(secretEnv, env);
}

export const WEBHOOK_PORT_ENV = 'PIXELMILL_WEBHOOK_PORT';

export async function startEmbeddedReceiver(options: {
  client: Client;
  stateDir: string;
  /** The run's provider: the only one whose webhooks this receiver takes. */
  provider: ProviderName;
  keys: ReceiverKeys;
  publicUrl?: string;
  log: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}): Promise<EmbeddedReceiver> {
  const fixedPort = (options.env ?? process.env)[WEBHOOK_PORT_ENV];
  if (fixedPort && !(/^\d+$/.test(fixedPort) && Number(fixedPort) <= 65535))
    throw new UserError('config_invalid', `${WEBHOOK_PORT_ENV}=${fixedPort} is not a port number`);
  const record = join(options.stateDir, 'webhook.json');
  // Only a hint: a damaged record is written anew below.
  const saved = readJsonFile<{ port?: number }>(record, 'ignore') ?? {};
  const start = (port: number) =>
    startWebhookServer({
      signal: temporalSignaller(options.client),
      verifierFor: receiverVerifiers(options.keys, [options.provider], options.env),
      port,
      log: options.log,
    });
  const port = fixedPort ? Number(fixedPort) : (saved.port ?? 0);
  let server: RunningWebhookServer;
  try {
    server = await start(port);
  } catch (error) {
    if (fixedPort || port === 0) throw error;
    server = await start(0); // the saved port is taken
  }
  writeJsonFile(record, { port: server.port });
  return { server, baseUrl: webhookBaseUrl(options.publicUrl ?? server.url, options.provider) };
}
