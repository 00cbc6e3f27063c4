// Where the CLI and the workers connect. Temporal's own envconfig decides: TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS*, TEMPORAL_PROFILE and the temporal.toml config
// file, exactly as the `temporal` CLI reads them. No address anywhere means "embedded": pixelmill
// starts its own local dev server (temporal/dev-server.ts).
//
// The API key travels only inside `connection`; `display` and every error name the cluster
// without it.
import { Client, Connection, type TLSConfig } from '@temporalio/client';
import { loadClientConfigProfile, toClientOptions, type ClientConnectConfig } from '@temporalio/envconfig';
import { NativeConnection } from '@temporalio/worker';
import { UserError } from '../common/errors.js';
import type { DevServer } from './dev-server.js';
import { diagnoseTls } from './tls-diagnosis.js';

/** Options both `Connection.connect` (client) and `NativeConnection.connect` (worker) accept. */
export interface TemporalConnectionOptions {
  address: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
}

/** A cluster to connect to: a configured one, or the local dev server once it runs. */
export interface TemporalEndpoint {
  connection: TemporalConnectionOptions;
  namespace: string;
  /** For people: address, namespace and how it authenticates, never the key itself. */
  display: string;
}

export type TemporalTarget = ({ mode: 'external' } & TemporalEndpoint) | { mode: 'embedded' };

function definedOnly(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(
    Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

function describe(options: TemporalConnectionOptions, namespace: string): string {
  const tls = options.tls !== undefined && options.tls !== false;
  const clientCert = typeof options.tls === 'object' && options.tls.clientCertPair !== undefined;
  const traits = [
    `namespace ${namespace}`,
    ...(tls ? ['TLS'] : []),
    ...(clientCert ? ['client certificate'] : []),
    ...(options.apiKey ? ['API key'] : []),
  ];
  return `${options.address} (${traits.join(', ')})`;
}

export async function resolveTemporalTarget(env: NodeJS.ProcessEnv = process.env): Promise<TemporalTarget> {
  let config: ClientConnectConfig;
  try {
    const profile = loadClientConfigProfile({ overrideEnvVars: definedOnly(env) });
    if (!profile.address) return { mode: 'embedded' };
    // Reads certificate files named by the profile, hence inside the try.
    config = toClientOptions(profile);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UserError(
      'temporal_config_invalid',
      `cannot read the Temporal connection settings (TEMPORAL_* env vars, TEMPORAL_PROFILE, ` +
        `${env.TEMPORAL_CONFIG_FILE ?? 'temporal.toml'}): ${reason}`,
    );
  }
  const { address, tls, apiKey, metadata } = config.connectionOptions;
  const connection: TemporalConnectionOptions = {
    address: address ?? '',
    ...(tls !== undefined && tls !== null ? { tls } : {}),
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(metadata !== undefined ? { metadata: metadata as Record<string, string> } : {}),
  };
  const namespace = config.namespace ?? 'default';
  return { mode: 'external', connection, namespace, display: describe(connection, namespace) };
}

/** The endpoint of a running local dev server, in the shape a configured cluster has. */
export function devServerEndpoint(
  server: Pick<DevServer, 'address' | 'namespace' | 'uiUrl'>,
): TemporalEndpoint {
  return {
    connection: { address: server.address },
    namespace: server.namespace,
    display: `${server.address} (local dev server, namespace ${server.namespace}, Web UI ${server.uiUrl})`,
  };
}

async function unreachable(endpoint: TemporalEndpoint, error: unknown): Promise<UserError> {
  // The SDK's messages name the address at most; the key is masked all the same.
  const cause = error instanceof Error ? (error.cause instanceof Error ? error.cause : error) : undefined;
  let reason = (cause?.message ?? String(error)).split('\n')[0] ?? '';
  // A TLS mismatch reaches the SDK as a deadline: our own handshake tells which setting is wrong.
  const tls = await diagnoseTls(endpoint.connection.address, endpoint.connection.tls).catch(() => undefined);
  if (tls) reason = tls;
  const key = endpoint.connection.apiKey;
  if (key) reason = reason.split(key).join('<api key>');
  return new UserError(
    'temporal_unreachable',
    `cannot connect to Temporal at ${endpoint.display}: ${reason}`,
  );
}

export async function connectClient(
  endpoint: TemporalEndpoint,
): Promise<{ client: Client; connection: Connection; close(): Promise<void> }> {
  let connection: Connection;
  try {
    connection = await Connection.connect(endpoint.connection);
  } catch (error) {
    throw await unreachable(endpoint, error);
  }
  const client = new Client({ connection, namespace: endpoint.namespace });
  return { client, connection, close: () => connection.close() };
}

export async function connectWorkerConnection(endpoint: TemporalEndpoint): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(endpoint.connection);
  } catch (error) {
    throw await unreachable(endpoint, error);
  }
}
