// The local Temporal dev server behind `pixelmill run` when no cluster is configured: one server
// per state folder, persisted in its SQLite file and reused by every later invocation.
//
// It is spawned detached (its own process group, output to a log file) so that it survives the
// CLI, even a SIGKILLed one: the next `pixelmill run` finds it through temporal-server.json and
// the workflows it holds resume. If it died instead, a new one opens the same database file.
import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { isUserError, UserError } from '../common/errors.js';
import { explainMissingBinary, resolveTemporalExecutable } from './binaries.js';
import {
  dbPath,
  isDevServerProcess,
  logPath,
  logTail,
  portIsFree,
  readRecord,
  removeRecord,
  terminateDevServer,
  withStartLock,
  writeRecord,
  type DevServerRecord,
} from './dev-server-process.js';
import { ensureNamespace, ensureSearchAttributes, type SearchAttributeSpec } from './server-admin.js';

export type { SearchAttributeSpec, SearchAttributeType } from './server-admin.js';

export interface DevServerOptions {
  /** Folder for the database, log and record, e.g. `<cwd>/.pixelmill`. */
  stateDir: string;
  /** gRPC port; default env PIXELMILL_TEMPORAL_PORT, else 7233. */
  port?: number;
  /** Web UI port; default env PIXELMILL_TEMPORAL_UI_PORT, else port + 1000 (8233). */
  uiPort?: number;
  namespace?: string;
  searchAttributes?: readonly SearchAttributeSpec[];
  log?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  startTimeoutMs?: number;
}

export interface DevServer {
  /** `127.0.0.1:<port>`. */
  address: string;
  uiUrl: string;
  namespace: string;
  pid: number;
  /** False when an earlier invocation's server was reused. */
  startedHere: boolean;
  /** Stops the server if this call started it; a reused server keeps running. */
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const PROBE_TIMEOUT_MS = 2_000;

function portFromEnv(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = env[name];
  if (value === undefined || value === '') return undefined;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port < 1 || port > 65535) {
    throw new UserError('config_invalid', `${name}=${value} is not a port number from 1 to 65535`);
  }
  return port;
}

/** Connects, and proves it is Temporal (an HTTP/2 server that is not answers UNIMPLEMENTED). */
async function answers(address: string, timeoutMs = PROBE_TIMEOUT_MS): Promise<boolean> {
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: timeoutMs });
    const live = connection;
    await live.withDeadline(Date.now() + timeoutMs, () => live.workflowService.getSystemInfo({}));
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close();
  }
}

async function uiAnswers(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

async function reuseRecorded(stateDir: string, timeoutMs: number, log: (line: string) => void) {
  const record = readRecord(stateDir);
  if (!record) return undefined;
  if (!isDevServerProcess(record.pid, record.dbFile)) {
    removeRecord(stateDir, record.pid);
    return undefined;
  }
  // Alive: answering, or still starting (another invocation spawned it a moment ago).
  const deadline = Date.now() + timeoutMs;
  while (!(await answers(record.address))) {
    if (!isDevServerProcess(record.pid, record.dbFile)) {
      removeRecord(stateDir, record.pid);
      return undefined;
    }
    if (Date.now() > deadline) {
      throw new UserError(
        'temporal_start_failed',
        `the local Temporal server (pid ${record.pid}, ${record.address}) runs but does not answer; ` +
          `stop it with \`kill ${record.pid}\` and retry. Its log ends: ${logTail(record.logFile) || '(empty)'}`,
      );
    }
    await sleep(250);
  }
  log(`pixelmill: reusing the local Temporal server at ${record.address} (pid ${record.pid})`);
  return record;
}

async function assertPortFree(port: number, envName: string, what: string): Promise<void> {
  if (await portIsFree(port)) return;
  const choose = `choose another with ${envName}=<port>`;
  if (await answers(`${HOST}:${port}`)) {
    throw new UserError(
      'temporal_port_in_use',
      `port ${port} (${what}) is used by a Temporal server that pixelmill did not start; ` +
        `use it with TEMPORAL_ADDRESS=${HOST}:${port}, stop it, or ${choose}`,
    );
  }
  throw new UserError(
    'temporal_port_in_use',
    `port ${port} (${what}) on ${HOST} is used by another program; ${choose}`,
  );
}

async function startNew(
  options: DevServerOptions,
  ports: { port: number; uiPort: number },
  namespace: string,
  timeoutMs: number,
  log: (line: string) => void,
): Promise<DevServerRecord> {
  await assertPortFree(ports.port, 'PIXELMILL_TEMPORAL_PORT', 'Temporal gRPC');
  await assertPortFree(ports.uiPort, 'PIXELMILL_TEMPORAL_UI_PORT', 'Temporal Web UI');
  const resolved = resolveTemporalExecutable('cli');
  if (resolved.executable.type !== 'existing-path') {
    // We spawn the binary ourselves, so the SDK's download cannot stand in for it.
    throw explainMissingBinary('cli', resolved, new Error('no Temporal CLI binary on this machine'));
  }
  const stateDir = resolve(options.stateDir);
  const dbFile = dbPath(stateDir);
  const logFile = logPath(stateDir);
  const flags: [string, string][] = [
    ['--ip', HOST],
    ['--port', String(ports.port)],
    ['--ui-port', String(ports.uiPort)],
    ['--db-filename', dbFile],
    ['--log-level', 'warn'],
    // A write-ahead log: each transaction appends to the log and syncs it once, where SQLite's
    // default rollback journal creates, syncs and deletes a file around every write (measured at
    // capacity: 1.5-1.8 ms of server CPU per image, against 2.1-2.6). Synchronous stays full, so a
    // committed transaction survives a power loss as before.
    ['--sqlite-pragma', 'journal_mode=wal'],
    ['--sqlite-pragma', 'synchronous=full'],
    // One partition: with the default four, the server-side task-queue rate limit dispatches in
    // clumps (measured 8-9 calls in one-second windows at a 5/s limit); with one, evenly spaced.
    ['--dynamic-config-value', 'matching.numTaskqueueReadPartitions=1'],
    ['--dynamic-config-value', 'matching.numTaskqueueWritePartitions=1'],
    // Nothing but loopback traffic: no call home to check for newer server versions.
    ['--dynamic-config-value', 'frontend.enableServerVersionCheck=false'],
    ...(namespace === 'default' ? [] : [['--namespace', namespace] as [string, string]]),
    ...(options.searchAttributes ?? []).map(({ name, type }): [string, string] => [
      '--search-attribute',
      `${name}=${type}`,
    ]),
  ];
  const args = ['server', 'start-dev', ...flags.flat()];
  const output = openSync(logFile, 'w');
  let child;
  try {
    child = spawn(resolved.executable.path, args, {
      detached: true,
      stdio: ['ignore', output, output],
      env: serverEnv(options.env ?? process.env),
    });
  } finally {
    closeSync(output);
  }
  const spawnError = new Promise<Error>((resolveError) => child.once('error', resolveError));
  let exited: string | undefined;
  child.once('exit', (code, signal) => {
    exited = signal ?? `exit code ${code}`;
  });
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw explainMissingBinary('cli', resolved, await spawnError);

  const address = `${HOST}:${ports.port}`;
  const record: DevServerRecord = {
    pid,
    address,
    uiUrl: `http://localhost:${ports.uiPort}`,
    port: ports.port,
    uiPort: ports.uiPort,
    dbFile,
    logFile,
    namespace,
    startedAt: new Date().toISOString(),
  };
  writeRecord(stateDir, record);
  log(`pixelmill: starting a local Temporal server at ${address} (state in ${stateDir})`);

  const deadline = Date.now() + timeoutMs;
  const fail = async (why: string): Promise<never> => {
    await terminateDevServer(pid, dbFile, 2_000);
    removeRecord(stateDir, pid);
    const tail = logTail(logFile);
    throw new UserError(
      'temporal_start_failed',
      `the local Temporal server ${why}${tail ? `; its log (${logFile}) ends: ${tail}` : ` (log: ${logFile})`}`,
    );
  };
  while (!(await answers(address, 1_000))) {
    if (exited !== undefined) return fail(`exited during start-up (${exited})`);
    if (Date.now() > deadline) return fail(`did not answer within ${Math.round(timeoutMs / 1000)} s`);
    await sleep(250);
  }
  // Probed on the address it binds; `localhost` (what people type) may resolve to ::1 first.
  while (!(await uiAnswers(`http://${HOST}:${ports.uiPort}/`))) {
    if (Date.now() > deadline) return fail(`Web UI did not answer on ${record.uiUrl}`);
    await sleep(250);
  }
  return record;
}

export async function ensureDevServer(options: DevServerOptions): Promise<DevServer> {
  const env = options.env ?? process.env;
  const log = options.log ?? ((): void => {});
  const namespace = options.namespace ?? 'default';
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  const port = options.port ?? portFromEnv(env, 'PIXELMILL_TEMPORAL_PORT') ?? 7233;
  const uiPort = options.uiPort ?? portFromEnv(env, 'PIXELMILL_TEMPORAL_UI_PORT') ?? port + 1000;
  if (uiPort > 65535) {
    throw new UserError(
      'config_invalid',
      `Web UI port ${uiPort} is above 65535; set PIXELMILL_TEMPORAL_UI_PORT`,
    );
  }
  const stateDir = resolve(options.stateDir);
  mkdirSync(stateDir, { recursive: true });

  const reused = await reuseRecorded(stateDir, timeoutMs, log);
  if (reused && (reused.port !== port || reused.uiPort !== uiPort)) {
    log(
      `note: it listens on ports ${reused.port}/${reused.uiPort}, not ${port}/${uiPort}; stop it to change them`,
    );
  }
  let record = reused;
  let startedHere = false;
  if (!record) {
    try {
      record = await withStartLock(stateDir, timeoutMs * 2, async () => {
        // Another invocation may have started it while this one waited for the lock.
        const started = await reuseRecorded(stateDir, timeoutMs, log);
        if (started) return started;
        const fresh = await startNew(options, { port, uiPort }, namespace, timeoutMs, log);
        startedHere = true;
        return fresh;
      });
    } catch (error) {
      // Lost a race with another invocation that started the server a moment earlier: join it.
      record =
        isUserError(error) && error.code === 'temporal_port_in_use'
          ? await reuseRecorded(stateDir, timeoutMs, log)
          : undefined;
      if (!record) throw error;
    }
  }
  const server = record;

  const connection = await Connection.connect({ address: server.address });
  try {
    await ensureNamespace(connection, namespace);
    await ensureSearchAttributes(connection, namespace, options.searchAttributes ?? []);
  } finally {
    await connection.close();
  }
  return {
    address: server.address,
    uiUrl: server.uiUrl,
    namespace,
    pid: server.pid,
    startedHere,
    async stop() {
      if (!startedHere) return;
      await terminateDevServer(server.pid, server.dbFile);
      removeRecord(stateDir, server.pid);
    },
  };
}

/** Stops the server recorded in `stateDir`, whoever started it. Resolves whether one was running. */
export async function stopDevServer(stateDir: string): Promise<boolean> {
  const dir = resolve(stateDir);
  const record = readRecord(dir);
  if (!record) return false;
  const running = isDevServerProcess(record.pid, record.dbFile);
  if (running) await terminateDevServer(record.pid, record.dbFile);
  removeRecord(dir, record.pid);
  return running;
}

/**
 * The server's environment. Go runs its code on at most half the machine's cores unless
 * GOMAXPROCS says otherwise: the server shares the machine with the workers it serves, and with
 * a thread per core its scheduler spends more CPU waking and parking threads than on requests
 * (measured at capacity on 2 cores: 1.6-1.8 ms of server CPU per image with 1, against 2.0-2.2
 * with 2; BENCHMARKS.md). One core of Go still serves about 500 images a second.
 */
export function serverEnv(env: NodeJS.ProcessEnv, cores = availableParallelism()): NodeJS.ProcessEnv {
  const goMaxProcs = env.GOMAXPROCS ?? String(Math.max(1, Math.floor(cores / 2)));
  return { ...env, GOMAXPROCS: goMaxProcs, TEMPORAL_VERSION_CHECK_DISABLED: '1' };
}
