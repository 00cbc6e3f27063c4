// The Temporal a chaos run happens on, and the server-side faults it can suffer: by default a
// persisted dev server the harness starts in the run's folder (restarted by SIGTERM on its
// SQLite state), or a cluster someone else runs and hands over (test/support/cluster.ts: its
// history service SIGKILLed, its PostgreSQL restarted). pixelmill's processes reach either by
// Temporal's environment configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*), the
// harness's own clients by the same address, namespace and TLS settings.
import { join } from 'node:path';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import { ensureDevServer, stopDevServer } from '../temporal/dev-server.js';
import { freePort, registerDevServer } from './processes.js';

/** A fault of the Temporal side, played by the disruption schedule. */
export type ServerFaultKind = 'restart-server' | 'restart-history' | 'restart-postgres';

/** How the harness's own clients (progress queries, the post-mortem) connect. */
export interface TemporalEndpoint {
  namespace: string;
  connectionOptions: ConnectionOptions & { address: string };
}

export interface ChaosTemporal extends TemporalEndpoint {
  /** host:port of the frontend. */
  address: string;
  /** What a `pixelmill` process needs to reach it: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TLS. */
  env: NodeJS.ProcessEnv;
  /** The faults it can suffer; each resolves once it serves again. */
  faults: Partial<Record<ServerFaultKind, () => Promise<void>>>;
  /** Where its state and logs are, for a run kept for a post-mortem. */
  stateDir: string;
  /** Stops what the harness started (a cluster handed over is left running). */
  stop(): Promise<void>;
}

/** Runs `fn` with a client of `endpoint`, closed afterwards. */
export async function withClient<T>(
  endpoint: TemporalEndpoint,
  fn: (client: Client) => Promise<T>,
): Promise<T> {
  const connection = await Connection.connect({ connectTimeout: 5_000, ...endpoint.connectionOptions });
  try {
    return await fn(new Client({ connection, namespace: endpoint.namespace }));
  } finally {
    await connection.close();
  }
}

/**
 * A persisted dev server under `<dir>/temporal`, on fixed free ports (a restart must come back at
 * the same address), with its one fault: stopped by SIGTERM, as an orchestrator would, and
 * started again on the same state.
 */
export async function startDevServerTemporal(dir: string): Promise<ChaosTemporal> {
  const stateDir = join(dir, 'temporal');
  const ports = { port: await freePort(), uiPort: await freePort() };
  const address = `127.0.0.1:${ports.port}`;
  const start = async (): Promise<void> =>
    void (await ensureDevServer({ stateDir, ...ports, startTimeoutMs: 60_000 }));
  registerDevServer(stateDir);
  await start();
  return {
    address,
    namespace: 'default',
    connectionOptions: { address },
    env: { TEMPORAL_ADDRESS: address, TEMPORAL_NAMESPACE: 'default' },
    stateDir,
    faults: {
      'restart-server': async () => {
        await stopDevServer(stateDir);
        await start();
      },
    },
    stop: async () => void (await stopDevServer(stateDir).catch(() => false)),
  };
}

/** What the chaos harness needs of a cluster handed over (test/support/cluster.ts's TemporalCluster). */
export interface HandedCluster {
  address: string;
  connectionOptions: TemporalEndpoint['connectionOptions'];
  clientEnv(namespace: string): NodeJS.ProcessEnv;
  restartHistory(): Promise<void>;
  restartPostgres(): Promise<void>;
  dir: string;
}

/**
 * A cluster as a chaos run's Temporal, in `namespace` (set up beforehand), with its two faults:
 * the history service SIGKILLed and started again, PostgreSQL restarted. `stop` is the owner's.
 */
export function clusterTemporal(
  cluster: HandedCluster,
  namespace: string,
  stop: () => Promise<void> = async () => undefined,
): ChaosTemporal {
  return {
    address: cluster.address,
    namespace,
    connectionOptions: cluster.connectionOptions,
    env: cluster.clientEnv(namespace),
    faults: {
      'restart-history': () => cluster.restartHistory(),
      'restart-postgres': () => cluster.restartPostgres(),
    },
    stateDir: join(cluster.dir, 'logs'),
    stop,
  };
}
