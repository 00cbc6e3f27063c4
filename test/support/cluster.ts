// A real Temporal cluster for tests, run the way docker-compose.yml runs one: PostgreSQL (Debian's
// binaries, as the `postgres` user when the tests run as root), Temporal's two databases and
// schemas made by deploy/temporal/setup-schema.sh itself, and the server built from its Go module
// (scripts/install-temporal-cluster.mjs) started from the same embedded config template the
// temporalio/server image renders, with the environment and dynamic config of the compose file's
// `temporal` service. Unlike compose, each of the four services (frontend, history, matching,
// worker) is a process of its own, so that a test can kill one.
//
// Differences from compose, each forced by running beside other tests on one machine: everything
// listens on 127.0.0.1 and on free ports; PostgreSQL runs with fsync off (these tests restart
// processes, never the machine) and room for the connections of four processes.
//
// Everything lives in one temp folder (logs/ holds a log per process) removed by stop(), unless
// PIXELMILL_KEEP_CLUSTER is set. No process of the cluster outlives the test process, even a
// SIGKILLed one: each is its direct child, started through util-linux's `setpriv --pdeathsig`, so
// the kernel signals it when its parent dies (prctl PR_SET_PDEATHSIG, which node cannot set). For
// that PostgreSQL runs in the foreground (no `pg_ctl start`, whose server is init's child).
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  chownSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Connection, isGrpcServiceError, type TLSConfig } from '@temporalio/client';
import { parse } from 'yaml';
import { ensureNamespace } from '../../temporal/server-admin.js';
import { freePort } from '../../temporal/dev-server-process.js';
import { projectRoot } from '../../temporal/binaries.js';

export const CLUSTER_SERVICES = ['frontend', 'history', 'matching', 'worker'] as const;
export type ClusterService = (typeof CLUSTER_SERVICES)[number];

/** What scripts/install-temporal-cluster.mjs built. */
export interface ClusterTools {
  version: string;
  server: string;
  sqlTool: string;
  schemaDir: string;
  /** Debian's PostgreSQL server binaries (initdb, pg_ctl, postgres). */
  pgBin: string;
}

/** Certificates for a frontend that serves TLS and asks every client for a certificate (mTLS). */
export interface ClusterTlsFiles {
  caFile: string;
  /** Presented by the frontend and, as a client, by the server's own services (SAN 127.0.0.1). */
  serverCertFile: string;
  serverKeyFile: string;
  /** The client certificate this module connects with. */
  clientCertFile: string;
  clientKeyFile: string;
}

export interface StartClusterOptions {
  /** Registered once the cluster serves; default `pixelmill-cluster`. */
  namespace?: string;
  tls?: ClusterTlsFiles;
}

export interface TemporalCluster {
  /** host:port of the frontend. */
  address: string;
  namespace: string;
  /** What Connection.connect needs, TLS and client certificate included. */
  connectionOptions: { address: string; tls?: TLSConfig };
  /**
   * What a `pixelmill` process needs to reach `namespace` (default the registered one), in
   * Temporal's environment configuration: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, and with TLS the
   * TEMPORAL_TLS_* paths of the CA and the client certificate.
   */
  clientEnv(namespace?: string): NodeJS.ProcessEnv;
  /** The temp folder; logs/<process>.log in it. */
  dir: string;
  logs: Record<ClusterService | 'postgres', string>;
  /** How long start() took, in milliseconds, the build excluded. */
  startMs: number;
  /** The process ids now: each service's, and the postmaster's (its backends are its children). */
  pids(): Record<ClusterService | 'postgres', number>;
  /** SIGKILLs the history service, starts it again and waits until every shard answers. */
  restartHistory(): Promise<void>;
  /** Stops PostgreSQL (fast shutdown: sessions cut), starts it again on the same port. */
  restartPostgres(): Promise<void>;
  stop(): Promise<void>;
}

const root = projectRoot();
const READY_TIMEOUT_MS = 120_000;

/** Builds the server on first use (minutes; other callers wait on its lock). `skip` when no Go. */
export async function clusterTools(): Promise<{ tools: ClusterTools } | { skip: string }> {
  const child = spawn(process.execPath, [join(root, 'scripts', 'install-temporal-cluster.mjs'), '--print'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    process.stderr.write(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  if (code === 0) return { tools: JSON.parse(stdout) as ClusterTools };
  if (code === 3) return { skip: stderr.trim().split('\n').pop() ?? 'no Go toolchain' };
  throw new Error(`scripts/install-temporal-cluster.mjs failed (exit ${code}): ${stderr.trim()}`);
}

// ---- docker-compose.yml: the settings the cluster shares with the compose stack -------------

interface ComposeService {
  environment?: Record<string, string | number>;
  volumes?: string[];
}

function composeServices(): Record<string, ComposeService> {
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8')) as {
    services: Record<string, ComposeService>;
  };
  return compose.services;
}

/** A service's environment with `${VAR:-default}` read as its default: never this machine's values. */
function composeEnv(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([name, value]) => [
      name,
      String(value).replace(/\$\{[A-Z0-9_]+:-([^}]*)\}/g, '$1'),
    ]),
  );
}

// ---- processes -------------------------------------------------------------------------------

/** `command` as the `postgres` user when this process is root (PostgreSQL refuses root). */
function asPostgres(command: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, args];
}

/**
 * Spawns `command` so that the kernel sends it `signal` when this process dies, however it dies:
 * `setpriv` sets the parent-death signal, changes user if asked (after which the signal still
 * holds: it is set last) and execs `command`, which keeps this process as its parent.
 */
export function spawnBoundToThisProcess(
  command: string,
  args: string[],
  options: {
    signal: 'KILL' | 'QUIT';
    user?: { uid: number; gid: number };
    cwd?: string;
    env?: NodeJS.ProcessEnv;
    log: string;
  },
): ChildProcess {
  const user = options.user
    ? [`--reuid=${options.user.uid}`, `--regid=${options.user.gid}`, '--clear-groups']
    : [];
  const out = openSync(options.log, 'a');
  try {
    return spawn('setpriv', [...user, '--pdeathsig', options.signal, '--', command, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', out, out],
    });
  } finally {
    closeSync(out);
  }
}

function runOrThrow(what: string, command: string, args: string[], env?: NodeJS.ProcessEnv): string {
  const result = spawnSync(command, args, { encoding: 'utf8', env: env ?? process.env });
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim() || String(result.error ?? '');
    throw new Error(`${what} failed (exit ${result.status ?? result.signal}): ${output}`);
  }
  return result.stdout;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'));
  if (!line)
    throw new Error('this machine has no `postgres` user: `apt-get install -y postgresql` creates it');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

/** A service process ended while the cluster was starting: waiting longer cannot help. */
class ServiceExited extends Error {
  override name = 'ServiceExited';
}

/** Fails at once when one of `children` has exited, naming it and the end of its log. */
function checkAlive(children: Map<ClusterService, ChildProcess>, logs: TemporalCluster['logs']): void {
  for (const [service, child] of children) {
    if (child.exitCode === null && child.signalCode === null) continue;
    const tail = readFileSync(logs[service], 'utf8').trim().split('\n').pop() ?? '';
    throw new ServiceExited(
      `the ${service} service exited (${child.exitCode ?? child.signalCode}): ${tail.slice(0, 300)}`,
    );
  }
}

/** Retries `attempt` until it succeeds; `alive` throws ServiceExited when waiting is pointless. */
async function retryUntil<T>(
  what: string,
  attempt: () => Promise<T>,
  alive: () => void,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    alive();
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof ServiceExited) throw error;
      if (Date.now() > deadline) {
        const reason = error instanceof Error ? error.message : String(error);
        throw new Error(`timed out after ${READY_TIMEOUT_MS / 1000} s waiting for ${what}: ${reason}`);
      }
    }
    await sleep(intervalMs);
  }
}

const GRPC_NOT_FOUND = 5;
type DescribeTaskQueueRequest = Parameters<Connection['workflowService']['describeTaskQueue']>[0];

/**
 * Waits until history owns every shard: a describe of a workflow that does not exist is answered
 * by the history service owning its shard, NOT_FOUND once it serves. 32 ids reach all 4 shards but
 * for a chance of 1 in 25,000.
 */
async function waitForHistory(connection: Connection, namespace: string, alive: () => void): Promise<void> {
  for (let i = 0; i < 32; i++) {
    await retryUntil(
      'the history service',
      async () => {
        try {
          await connection.workflowService.describeWorkflowExecution({
            namespace,
            execution: { workflowId: `pixelmill-cluster-probe-${i}` },
          });
        } catch (error) {
          if (isGrpcServiceError(error) && error.code === GRPC_NOT_FOUND) return;
          throw error;
        }
      },
      alive,
    );
  }
}

const execFileAsync = promisify(execFile);

/** Waits until PostgreSQL accepts connections (pg_isready), failing at once if it exited. */
async function waitForPostgres(
  pgIsReady: string,
  port: number,
  postmaster: ChildProcess,
  log: string,
): Promise<void> {
  const alive = (): void => {
    if (postmaster.exitCode === null && postmaster.signalCode === null) return;
    const tail = readFileSync(log, 'utf8').trim().split('\n').slice(-3).join(' | ');
    throw new ServiceExited(`PostgreSQL exited (${postmaster.exitCode ?? postmaster.signalCode}): ${tail}`);
  };
  await retryUntil(
    'PostgreSQL',
    () => execFileAsync(pgIsReady, ['-q', '-h', '127.0.0.1', '-p', String(port)]),
    alive,
    100,
  );
}

export async function startTemporalCluster(
  tools: ClusterTools,
  options: StartClusterOptions = {},
): Promise<TemporalCluster> {
  const started = Date.now();
  const namespace = options.namespace ?? 'pixelmill-cluster';
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-cluster-'));
  // The `postgres` user must reach its folder inside.
  chmodSync(dir, 0o755);
  const logsDir = join(dir, 'logs');
  mkdirSync(logsDir);
  const logs = Object.fromEntries(
    [...CLUSTER_SERVICES, 'postgres'].map((name) => [name, join(logsDir, `${name}.log`)]),
  ) as TemporalCluster['logs'];
  const children = new Map<ClusterService, ChildProcess>();
  const { pgBin } = tools;
  const pgDir = join(dir, 'postgres');
  const pgData = join(pgDir, 'data');
  let postmaster: ChildProcess | undefined;

  // What the parent-death signals do if this process is killed, done on an ordinary exit too.
  const killEverything = (): void => {
    for (const child of children.values()) child.kill('SIGKILL');
    postmaster?.kill('SIGQUIT');
  };
  process.once('exit', killEverything);

  try {
    // PostgreSQL as the compose file's postgres image sets it up: a superuser named by
    // POSTGRES_USER with POSTGRES_PASSWORD, password authentication over TCP.
    const services = composeServices();
    const pgEnv = composeEnv(services.postgresql!);
    const pgPort = await freePort();
    mkdirSync(pgDir);
    const owner = postgresUser();
    if (owner) chownSync(pgDir, owner.uid, owner.gid);
    if (owner) chownSync(logsDir, owner.uid, owner.gid);
    const passwordFile = join(pgDir, 'password');
    writeFileSync(passwordFile, `${pgEnv.POSTGRES_PASSWORD}\n`);
    if (owner) chownSync(passwordFile, owner.uid, owner.gid);
    const [initdb, initArgs] = asPostgres(join(pgBin, 'initdb'), [
      '-D',
      pgData,
      '-U',
      pgEnv.POSTGRES_USER!,
      `--pwfile=${passwordFile}`,
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
    ]);
    runOrThrow('initdb', initdb, initArgs);
    const pgArgs = [
      ['-D', pgData],
      ['-p', String(pgPort)],
      ['-k', pgDir],
      ['-c', 'listen_addresses=127.0.0.1'],
      ['-c', 'max_connections=300'],
      ['-c', 'fsync=off'],
      ['-c', 'synchronous_commit=off'],
      ['-c', 'full_page_writes=off'],
    ].flat();
    /** The postmaster as pg_ctl starts it, but as this process's child; SIGQUIT (immediate shutdown) if it dies. */
    const startPostgres = async (): Promise<void> => {
      const child = spawnBoundToThisProcess(join(pgBin, 'postgres'), pgArgs, {
        signal: 'QUIT',
        ...(owner ? { user: owner } : {}),
        log: logs.postgres,
      });
      postmaster = child;
      await waitForPostgres(join(pgBin, 'pg_isready'), pgPort, child, logs.postgres);
    };
    /** Fast shutdown (every session cut, as `pg_ctl stop -m fast`), waiting until it has exited. */
    const stopPostgres = async (): Promise<void> => {
      const child = postmaster;
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const gone = once(child, 'exit');
      child.kill('SIGINT');
      await gone;
    };
    await startPostgres();

    // The databases and schemas, by the compose stack's one-shot script.
    const schemaEnv = {
      ...composeEnv(services['temporal-schema']!),
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(pgPort),
      TEMPORAL_SCHEMA_DIR: tools.schemaDir,
      PATH: `${join(tools.sqlTool, '..')}:${process.env.PATH ?? ''}`,
    };
    writeFileSync(
      join(logsDir, 'setup-schema.log'),
      runOrThrow(
        'deploy/temporal/setup-schema.sh',
        'sh',
        [join(root, 'deploy', 'temporal', 'setup-schema.sh')],
        schemaEnv,
      ),
    );

    // The compose service's volumes, laid out under a folder standing for the container's root:
    // DYNAMIC_CONFIG_FILE_PATH is relative to the image's working directory, /etc/temporal.
    const temporalService = services.temporal!;
    const containerRoot = join(dir, 'container');
    for (const volume of temporalService.volumes ?? []) {
      const [host, target] = volume.split(':');
      if (!host?.startsWith('./') || !target) continue;
      mkdirSync(join(containerRoot, target, '..'), { recursive: true });
      symlinkSync(join(root, host), join(containerRoot, target));
    }
    const workdir = join(containerRoot, 'etc', 'temporal');
    mkdirSync(workdir, { recursive: true });

    const ports: Record<string, string> = {};
    for (const service of CLUSTER_SERVICES) {
      ports[`${service.toUpperCase()}_GRPC_PORT`] = String(await freePort());
      ports[`${service.toUpperCase()}_MEMBERSHIP_PORT`] = String(await freePort());
    }
    ports.FRONTEND_HTTP_PORT = String(await freePort());
    const tls = options.tls;
    const serverEnv: Record<string, string> = {
      // Only what the image's environment has: no TEMPORAL_* of this machine reaches the server
      // (TEMPORAL_CONFIG_DIR and friends would switch it off the embedded template).
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      ...composeEnv(temporalService),
      POSTGRES_SEEDS: '127.0.0.1',
      DB_PORT: String(pgPort),
      BIND_ON_IP: '127.0.0.1',
      ...ports,
      ...(tls
        ? {
            TEMPORAL_TLS_REQUIRE_CLIENT_AUTH: 'true',
            TEMPORAL_TLS_FRONTEND_CERT: tls.serverCertFile,
            TEMPORAL_TLS_FRONTEND_KEY: tls.serverKeyFile,
            TEMPORAL_TLS_CLIENT1_CA_CERT: tls.caFile,
            TEMPORAL_TLS_CLIENT2_CA_CERT: tls.caFile,
            // Internode TLS, whose certificate the worker service also presents to the frontend.
            TEMPORAL_TLS_SERVER_CERT: tls.serverCertFile,
            TEMPORAL_TLS_SERVER_KEY: tls.serverKeyFile,
            TEMPORAL_TLS_SERVER_CA_CERT: tls.caFile,
            TEMPORAL_TLS_FRONTEND_SERVER_NAME: 'localhost',
            TEMPORAL_TLS_INTERNODE_SERVER_NAME: 'localhost',
          }
        : {}),
    };

    const startService = (service: ClusterService): void => {
      const child = spawnBoundToThisProcess(tools.server, ['start', '--service', service], {
        signal: 'KILL',
        cwd: workdir,
        env: serverEnv,
        log: logs[service],
      });
      children.set(service, child);
    };
    // The frontend first: on a new database the first process to start writes the cluster's
    // metadata, and two writing it at once fail one of them ("failed to initialize current
    // cluster metadata"). Compose runs the services in one process; separate processes on a
    // new database rely on restarts, which would hide real crashes here.
    const alive = (): void => checkAlive(children, logs);
    startService('frontend');

    const address = `127.0.0.1:${ports.FRONTEND_GRPC_PORT}`;
    const connectionOptions = {
      address,
      ...(tls
        ? {
            tls: {
              serverNameOverride: 'localhost',
              serverRootCACertificate: readFileSync(tls.caFile),
              clientCertPair: { crt: readFileSync(tls.clientCertFile), key: readFileSync(tls.clientKeyFile) },
            },
          }
        : {}),
    };
    const connection = await retryUntil(
      'the frontend',
      () => Connection.connect({ ...connectionOptions, connectTimeout: 2_000 }),
      alive,
    );
    for (const service of CLUSTER_SERVICES) if (service !== 'frontend') startService(service);
    try {
      await retryUntil(`namespace ${namespace}`, () => ensureNamespace(connection, namespace), alive);
      await waitForHistory(connection, namespace, alive);
      // Matching answers (a task queue's description comes from its owner). 1: WORKFLOW queues.
      const taskQueueType = 1 as unknown as DescribeTaskQueueRequest['taskQueueType'];
      await retryUntil(
        'the matching service',
        () =>
          connection.workflowService.describeTaskQueue({
            namespace,
            taskQueue: { name: 'pixelmill-cluster-probe' },
            taskQueueType,
          }),
        alive,
      );
    } finally {
      await connection.close();
    }

    const stopService = async (service: ClusterService, signal: NodeJS.Signals): Promise<void> => {
      const child = children.get(service);
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    };

    return {
      address,
      namespace,
      connectionOptions,
      dir,
      logs,
      startMs: Date.now() - started,
      clientEnv: (forNamespace = namespace) => ({
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: forNamespace,
        ...(tls
          ? {
              // The certificate's DNS name: Node warns on stderr when TLS's server name is an IP address (RFC 6066).
              TEMPORAL_TLS_SERVER_NAME: 'localhost',
              TEMPORAL_TLS_SERVER_CA_CERT_PATH: tls.caFile,
              TEMPORAL_TLS_CLIENT_CERT_PATH: tls.clientCertFile,
              TEMPORAL_TLS_CLIENT_KEY_PATH: tls.clientKeyFile,
            }
          : {}),
      }),
      pids() {
        const pid = (child: ChildProcess | undefined): number => child?.pid ?? 0;
        const services = CLUSTER_SERVICES.map((service) => [service, pid(children.get(service))]);
        return { ...Object.fromEntries(services), postgres: pid(postmaster) } as Record<
          ClusterService | 'postgres',
          number
        >;
      },
      async restartHistory() {
        await stopService('history', 'SIGKILL');
        startService('history');
        const probe = await Connection.connect(connectionOptions);
        try {
          await waitForHistory(probe, namespace, alive);
        } finally {
          await probe.close();
        }
      },
      async restartPostgres() {
        await stopPostgres();
        await startPostgres();
      },
      async stop() {
        await Promise.all(CLUSTER_SERVICES.map((service) => stopService(service, 'SIGTERM')));
        await stopPostgres();
        process.removeListener('exit', killEverything);
        if (!process.env.PIXELMILL_KEEP_CLUSTER) rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    killEverything();
    process.removeListener('exit', killEverything);
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`the Temporal cluster did not start: ${reason} (logs in ${logsDir})`);
  }
}
