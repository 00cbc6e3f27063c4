// The production path on a real cluster (issue 43), one cluster for the whole file: Temporal built
// from its Go module at the version docker-compose.yml pins, four services as separate processes
// on PostgreSQL with SQL visibility (test/support/cluster.ts), serving TLS with a CA this file
// makes and requiring client certificates (mTLS). Every `pixelmill` process reaches it as in
// production, through Temporal's environment configuration (TEMPORAL_TLS_* variables, or a
// temporal.toml profile).
//
// In order, on the same cluster: `pixelmill setup` on a fresh namespace and a 20-item run found by
// its search attributes; then at once, as they wait on other processes more than they compute,
// setup's refusals (a conflicting attribute, Temporal Cloud), a TLS profile, the connections
// refused without the client certificate or the CA, and a check that no cluster process outlives
// a SIGKILLed test process; last, because it kills and restarts the cluster's parts, the chaos
// run: 1,000 items sharing nothing with the CLI, through a SIGKILL of the history service, a
// PostgreSQL restart, a worker SIGKILLed and a worker cut off for 30 s.
//
// Skipped, saying why, only on a machine without Go (the server cannot be built there).
import { spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chaosChecks, formatChaosReport } from '../bench/chaos-report.js';
import type { Disruption } from '../bench/chaos-config.js';
import { runChaos } from '../bench/chaos-run.js';
import { clusterTemporal } from '../bench/chaos-temporal.js';
import { cleanUpAll } from '../bench/processes.js';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { ensureNamespace, INDEXED_VALUE_TYPES } from '../temporal/server-admin.js';
import { readReport } from '../bench/catalog-audit.js';
import { FAST_EMULATOR, writeCatalog } from './support/catalog-harness.js';
import { CLI, collectOutput, type CliResult } from './support/cli.js';
import { makeTestCertificates } from './support/cluster-certs.js';
import {
  CLUSTER_SERVICES,
  clusterTools,
  startTemporalCluster,
  type ClusterTlsFiles,
  type TemporalCluster,
} from './support/cluster.js';
import { startTestEmulator } from './support/emulator.js';
import { waitUntil } from './support/wait.js';

const installed = await clusterTools();
const skipReason = 'skip' in installed ? installed.skip : undefined;
const skipped = skipReason ? ` (skipped: ${skipReason})` : '';

/** A namespace no one has set up: `pixelmill setup` creates it. */
const NAMESPACE = 'catalog-ops';

let cluster: TemporalCluster;
let certs: ClusterTlsFiles;
let emulator: RunningEmulator;
let dir: string;
/** This process's environment without any Temporal, pixelmill or AWS setting of the machine. */
let baseEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!('tools' in installed)) return;
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-cluster-test-'));
  mkdirSync(join(dir, 'certs'));
  certs = makeTestCertificates(join(dir, 'certs'));
  baseEnv = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name) && name !== 'XDG_CONFIG_HOME',
      ),
    ),
    HOME: dir,
  };
  cluster = await startTemporalCluster(installed.tools, { tls: certs });
  process.stderr.write(`cluster: the cluster started in ${(cluster.startMs / 1000).toFixed(1)} s\n`);
  emulator = await startTestEmulator(FAST_EMULATOR);
}, 600_000);

afterAll(async () => {
  await cleanUpAll();
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** `pixelmill <args>` with `env` and nothing of this machine's Temporal settings. */
function pixelmillWith(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: dir,
    env: { ...baseEnv, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collectOutput(child);
}

/** `pixelmill <args>` reaching the cluster's `namespace` with the client certificate, plus `env`. */
function pixelmill(args: string[], env: NodeJS.ProcessEnv = {}, namespace = NAMESPACE): Promise<CliResult> {
  return pixelmillWith(args, { ...cluster.clientEnv(namespace), ...env });
}

async function registeredAttributes(namespace: string): Promise<Record<string, number>> {
  const connection = await Connection.connect(cluster.connectionOptions);
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
    return Object.fromEntries(
      Object.entries(customAttributes ?? {}).map(([name, type]) => [name, Number(type)]),
    );
  } finally {
    await connection.close();
  }
}

/** `pixelmill worker` on the cluster, serving the emulator's demo account, once it has connected. */
async function startWorker(): Promise<{
  output: () => string;
  account: string;
  stop: () => Promise<unknown>;
}> {
  const worker = spawn(process.execPath, [CLI, 'worker'], {
    cwd: dir,
    env: {
      ...baseEnv,
      ...cluster.clientEnv(NAMESPACE),
      PIXELMILL_API_BASE_URL: emulator.url,
      PIXELMILL_API_KEY: DEMO_API_KEY,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  worker.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  worker.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  const stop = async (): Promise<unknown> => {
    if (worker.exitCode === null) worker.kill('SIGTERM');
    return exited;
  };
  try {
    await waitUntil(
      'the worker to connect',
      () => {
        if (worker.exitCode !== null) throw new Error(`pixelmill worker exited:\n${output}`);
        return output.includes('pixelmill worker connected');
      },
      60_000,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  // This machine has no API key: a run names the account the worker serves, by its id.
  const account = /serving API account (a[0-9a-f]{16}) \(/.exec(output)?.[1];
  if (!account) throw new Error(`no account in the worker's output:\n${output}`);
  return { output: () => output, account, stop };
}

const wanted = Object.fromEntries(
  PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => [name, INDEXED_VALUE_TYPES[type]]),
);

describe.skipIf(skipReason !== undefined)(`pixelmill on a Temporal cluster on PostgreSQL${skipped}`, () => {
  it('runs the version docker-compose.yml pins, with 4 history shards and SQL visibility on PostgreSQL', async () => {
    const connection = await Connection.connect(cluster.connectionOptions);
    try {
      const info = await connection.workflowService.getClusterInfo({});
      expect(info.serverVersion).toBe('tools' in installed ? installed.tools.version : '');
      expect(info.historyShardCount).toBe(4);
      expect(info.persistenceStore).toBe('postgres12');
      expect(info.visibilityStore).toBe('postgres12');
    } finally {
      await connection.close();
    }
  });

  it('`pixelmill setup` creates the namespace and the search attributes over mTLS; a second run says they exist', async () => {
    const first = await pixelmill(['setup']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(
      `pixelmill setup: on ${cluster.address} (namespace ${NAMESPACE}, TLS, client certificate):`,
    );
    expect(first.stdout).toContain(`pixelmill setup: created namespace ${NAMESPACE}`);
    expect(first.stdout).toContain(`pixelmill setup: created search attributes in namespace ${NAMESPACE}: `);
    expect(await registeredAttributes(NAMESPACE)).toEqual(wanted);

    const second = await pixelmill(['setup']);
    expect(second.code).toBe(0);
    expect(second.stdout).not.toContain('created');
    expect(second.stdout).toContain(`namespace ${NAMESPACE} already has pixelmill's search attributes`);
    expect(await registeredAttributes(NAMESPACE)).toEqual(wanted);
  }, 60_000);

  it('a 20-item run completes on the cluster; `list --query` finds it by its search attributes, `status` reads it', async () => {
    const worker = await startWorker();
    try {
      expect(worker.output()).toContain(
        `connected to ${cluster.address} (namespace ${NAMESPACE}, TLS, client certificate)`,
      );
      const catalog = writeCatalog(dir, {
        name: 'cluster-setup',
        baseUrl: emulator.url,
        items: Array.from({ length: 20 }, (_, i) => ({ id: `s${i}`, prompt: `cluster-setup product ${i}` })),
      });
      const run = await pixelmill([
        'run',
        catalog.file,
        '--wait',
        '--no-progress',
        '--api-account',
        worker.account,
      ]);
      expect(run.stderr).toContain(`on ${cluster.address} (namespace ${NAMESPACE}, TLS, client certificate)`);
      expect(run.code, run.stderr).toBe(0);
      const report = readReport(catalog);
      expect(report).toHaveLength(20);
      expect(report.every((line) => line.status === 'completed')).toBe(true);

      // Found by a custom attribute's value, and only by the right one (SQL visibility); the
      // commands, each mostly a node start, at once.
      const [listed, byCount, none, status] = await Promise.all([
        pixelmill(['list', '--json', '--query', "PixelmillManifest = 'cluster-setup'"]),
        pixelmill(['list', '--json', '--query', 'PixelmillCompleted = 20 AND PixelmillFailed = 0']),
        pixelmill(['list', '--json', '--query', "PixelmillManifest = 'another'"]),
        pixelmill(['status', 'cluster-setup', '--json']),
      ]);
      expect(listed.code, listed.stderr).toBe(0);
      expect(JSON.parse(listed.stdout)).toMatchObject([
        { runId: catalog.runId, status: 'COMPLETED', items: 20, completed: 20, failed: 0 },
      ]);
      expect(JSON.parse(byCount.stdout).map((listing: { runId: string }) => listing.runId)).toEqual([
        catalog.runId,
      ]);
      expect(none.code).toBe(0);
      expect(JSON.parse(none.stdout)).toEqual([]);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ runId: catalog.runId, status: 'COMPLETED' });
    } finally {
      await worker.stop();
    }
  }, 240_000);
});

/** Whether `pid` runs (a zombie, dead but not yet reaped, does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The children of `parent` now, from /proc (PostgreSQL's backends and background processes). */
function childrenOf(parent: number): number[] {
  return readdirPids().filter((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent;
    } catch {
      return false;
    }
  });
}

function readdirPids(): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number);
}

// Tests of this block are independent of each other and wait mostly on other processes (the
// refusals on the SDK's 10 s connect deadline): they run at once.
describe
  .skipIf(skipReason !== undefined)
  .concurrent(
    `what pixelmill refuses on the cluster, a TLS profile, and the cluster's processes' lifetime${skipped}`,
    () => {
      it('`pixelmill setup` refuses a namespace where one of its attributes has another type, one line per conflict', async () => {
        const namespace = 'conflicting';
        const connection = await Connection.connect(cluster.connectionOptions);
        try {
          await ensureNamespace(connection, namespace);
          // 2: Keyword, where pixelmill needs Int.
          const searchAttributes = { PixelmillItems: 2 } as unknown as Parameters<
            Connection['operatorService']['addSearchAttributes']
          >[0]['searchAttributes'];
          await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
        } finally {
          await connection.close();
        }
        const result = await pixelmill(['setup'], {}, namespace);
        expect(result.code).toBe(1);
        expect(result.stderr).toBe(
          `pixelmill: namespace ${namespace} is not usable as it is:\n` +
            `  PixelmillItems exists in namespace ${namespace} as Keyword, pixelmill needs Int: remove it ` +
            `(temporal operator search-attribute remove --namespace ${namespace} --name PixelmillItems) or use another namespace\n`,
        );
        // Nothing was added beside the conflict.
        expect(await registeredAttributes(namespace)).toEqual({ PixelmillItems: 2 });
      }, 60_000);

      it('with an API key (Temporal Cloud) adds nothing and prints the tcld command for each missing attribute', async () => {
        // The namespace the cluster support registered, without pixelmill's attributes. The cluster
        // has no authorizer: it ignores the key and checks the client certificate.
        const secret = 'tmprl-cluster-setup-secret-0123456789';
        const result = await pixelmill(['setup'], { TEMPORAL_API_KEY: secret }, cluster.namespace);
        expect(result.code).toBe(1);
        expect(result.stdout).toBe('');
        const lines = result.stderr.trim().split('\n');
        expect(lines[0]).toMatch(
          /^pixelmill: Temporal Cloud adds search attributes through its control plane/,
        );
        expect(lines.slice(1, -1)).toEqual(
          PIXELMILL_SEARCH_ATTRIBUTES.map(
            ({ name, type }) =>
              `  tcld namespace search-attributes add --namespace ${cluster.namespace} --search-attribute ${name}=${type}`,
          ),
        );
        expect(lines.at(-1)).toContain(`https://cloud.temporal.io/namespaces/${cluster.namespace}`);
        expect(result.stderr).not.toContain(secret);
        expect(await registeredAttributes(cluster.namespace)).toEqual({});
      }, 60_000);

      it('`list` connects through a TEMPORAL_PROFILE of a temporal.toml with the certificate paths', async () => {
        const configFile = join(dir, 'temporal.toml');
        writeFileSync(
          configFile,
          [
            '[profile.cluster]',
            `address = "${cluster.address}"`,
            `namespace = "${cluster.namespace}"`,
            '[profile.cluster.tls]',
            'server_name = "localhost"',
            `server_ca_cert_path = "${certs.caFile}"`,
            `client_cert_path = "${certs.clientCertFile}"`,
            `client_key_path = "${certs.clientKeyFile}"`,
            '',
          ].join('\n'),
        );
        const listed = await pixelmillWith(['list'], {
          TEMPORAL_CONFIG_FILE: configFile,
          TEMPORAL_PROFILE: 'cluster',
        });
        expect(listed.stderr).toBe('');
        expect(listed.code).toBe(0);
        expect(listed.stdout).toBe(
          `pixelmill: no runs on ${cluster.address} (namespace ${cluster.namespace}, TLS, client certificate)\n`,
        );
      }, 60_000);

      it('without the client certificate, or without the CA, the connection is refused in one line that names the fix', async () => {
        const {
          TEMPORAL_TLS_CLIENT_CERT_PATH: _cert,
          TEMPORAL_TLS_CLIENT_KEY_PATH: _key,
          ...withoutCert
        } = cluster.clientEnv();
        const { TEMPORAL_TLS_SERVER_CA_CERT_PATH: _ca, ...withoutCa } = cluster.clientEnv();
        // Each waits for the SDK's connect deadline (10 s): the three at once.
        const [refused, untrusted, worker] = await Promise.all([
          pixelmillWith(['list'], withoutCert),
          pixelmillWith(['list'], withoutCa),
          // The same refusal reaches a worker (the SDK's Rust core connects it).
          pixelmillWith(['worker'], {
            ...withoutCert,
            PIXELMILL_API_BASE_URL: 'http://127.0.0.1:9',
            PIXELMILL_API_KEY: DEMO_API_KEY,
          }),
        ]);
        expect(refused.code).toBe(1);
        expect(refused.stdout).toBe('');
        expect(refused.stderr).toBe(
          `pixelmill: cannot connect to Temporal at ${cluster.address} (namespace ${cluster.namespace}, TLS): ` +
            'the server requires a client certificate (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED): set ' +
            "TEMPORAL_TLS_CLIENT_CERT_PATH and TEMPORAL_TLS_CLIENT_KEY_PATH (or a profile's tls.client_cert_path and tls.client_key_path)\n",
        );
        expect(untrusted.code).toBe(1);
        expect(untrusted.stderr).toMatch(
          /^pixelmill: cannot connect to Temporal at \S+ \(namespace \S+, TLS, client certificate\): the server's certificate is not trusted \(\w+\): set TEMPORAL_TLS_SERVER_CA_CERT_PATH to its CA\n$/,
        );
        expect(worker.code).toBe(1);
        expect(worker.stderr.trimEnd().split('\n').at(-1)).toMatch(
          /: the server requires a client certificate/,
        );
      }, 90_000);

      it('no process of a cluster outlives its test process when that one is SIGKILLed', async () => {
        if (!('tools' in installed)) return;
        // A test process of its own: node loading test/support/cluster.ts as vitest does (vite's
        // module runner), starting a cluster, printing its process ids, then waiting.
        const script = [
          "const { runnerImport } = await import('vite');",
          "const { module } = await runnerImport(process.env.CLUSTER_SUPPORT, { configFile: false, logLevel: 'silent' });",
          'const cluster = await module.startTemporalCluster(JSON.parse(process.env.CLUSTER_TOOLS));',
          "process.stdout.write(JSON.stringify({ dir: cluster.dir, pids: cluster.pids() }) + '\\n');",
          'setInterval(() => undefined, 60_000);',
        ].join('\n');
        const owner = spawn(process.execPath, ['--input-type=module', '-e', script], {
          cwd: join(import.meta.dirname, '..'),
          env: {
            ...baseEnv,
            CLUSTER_SUPPORT: join(import.meta.dirname, 'support', 'cluster.ts'),
            CLUSTER_TOOLS: JSON.stringify(installed.tools),
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let output = '';
        owner.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
        owner.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
        const exited = new Promise((resolve) => owner.once('exit', resolve));
        let started: { dir: string; pids: Record<string, number> } | undefined;
        try {
          started = await waitUntil(
            'the other test process to start its cluster',
            () => {
              if (owner.exitCode !== null) throw new Error(`the test process exited:\n${output}`);
              const line = output.split('\n').find((text) => text.startsWith('{'));
              return line ? (JSON.parse(line) as { dir: string; pids: Record<string, number> }) : undefined;
            },
            120_000,
          );
          const { pids } = started;
          expect(Object.keys(pids).sort()).toEqual([...CLUSTER_SERVICES, 'postgres'].sort());
          const backends = childrenOf(pids.postgres!);
          const all = [...Object.values(pids), ...backends];
          expect(all.every(running)).toBe(true);
          expect(backends.length).toBeGreaterThan(0);

          owner.kill('SIGKILL');
          await exited;
          await waitUntil(
            'every process of the cluster to end',
            () => all.every((pid) => !running(pid)),
            30_000,
          );
        } finally {
          if (owner.exitCode === null) owner.kill('SIGKILL');
          await exited;
          if (started && existsSync(started.dir)) rmSync(started.dir, { recursive: true, force: true });
        }
      }, 180_000);
    },
  );

const CHAOS_ITEMS = 1_000;
const CUT_OFF_MS = 30_000;
/**
 * Each fault while items are in flight: the cut-off first, as it lasts 30 s while the run goes on;
 * the others after it, apart enough that each has recovered before the next.
 */
const SCHEDULE: Disruption[] = [
  { kind: 'cut-off', atShare: 0.1, worker: 2 },
  { kind: 'kill', atShare: 0.3, worker: 0 },
  { kind: 'restart-history', atShare: 0.5, worker: -1 },
  { kind: 'restart-postgres', atShare: 0.7, worker: -1 },
];
const SIGKILLS = SCHEDULE.filter((event) => event.kind === 'kill' || event.kind === 'restart-history').length;
const RUN_DEADLINE_MS = 480_000;

describe.skipIf(skipReason !== undefined)(`a run on the cluster through its faults${skipped}`, () => {
  it(`${CHAOS_ITEMS} items sharing nothing lose nothing through a history SIGKILL, a PostgreSQL restart, a worker SIGKILLed and one cut off for 30 s`, async () => {
    const namespace = 'chaos';
    const started = Date.now();
    const log = (line: string): void =>
      console.log(`[${((Date.now() - started) / 1000).toFixed(1)} s] ${line}`);
    const setup = await pixelmill(['setup'], {}, namespace);
    expect(setup.code, setup.stderr).toBe(0);

    const result = await runChaos({
      items: CHAOS_ITEMS,
      kills: 1,
      seed: 43,
      workers: 3,
      restartServer: true,
      schedule: SCHEDULE,
      cutOffMs: CUT_OFF_MS,
      webhookOutageMs: 0,
      sharedNothing: true,
      calmApi: true,
      // Tasks take 1 s: the run is bound by CPU, not by the API's clock.
      timeScale: 0.02,
      deadlineMs: RUN_DEADLINE_MS,
      temporal: clusterTemporal(cluster, namespace),
      cli: CLI,
      log,
      // A folder to keep the run's logs in, for a look at a failure.
      ...(process.env.PIXELMILL_CHAOS_DIR ? { dir: process.env.PIXELMILL_CHAOS_DIR } : {}),
    });
    log('chaos: audited');
    const checks = chaosChecks(result);
    console.log(formatChaosReport(result, checks));
    const { audit } = result;
    if (audit.resubmitted.length > 0) console.log(`resubmitted: ${JSON.stringify(audit.resubmitted)}`);

    // Every fault hit the run while it had items in flight, and each was real.
    expect(result.disruptions.map((event) => [event.kind, event.at_s !== null])).toEqual(
      SCHEDULE.map((event) => [event.kind, true]),
    );
    const cutOff = result.disruptions.find((event) => event.kind === 'cut-off');
    // The cut froze live connections. What it froze besides (completions Temporal refused once
    // healed) depends on whether an activity was running on that worker at the instant of the cut:
    // reported, not asserted.
    expect(cutOff?.connections?.open_at_cut).toBeGreaterThan(0);
    expect(readFileSync(cluster.logs.history, 'utf8').match(/"msg":"Build info\."/g)).toHaveLength(2);
    expect(readFileSync(cluster.logs.postgres, 'utf8').match(/ready to accept connections/g)).toHaveLength(2);
    // No process died by itself (a worker cut off stays up and comes back).
    expect(result.unplanned_restarts).toEqual([]);

    expect(result.finished).toBe(true);
    expect(audit.problems).toEqual([]);
    expect(audit.items_lost).toBe(0);
    expect(audit.items_stuck).toBe(0);
    expect(audit.completed).toBe(CHAOS_ITEMS);
    expect(audit.images_bad).toBe(0);
    expect(audit.report_inconsistencies).toBe(0);
    expect(audit.tasks_not_journaled).toBe(0);
    expect(audit.prompts_submitted_more_than_once).toBeLessThanOrEqual(SIGKILLS);
    expect(checks.filter((check) => !check.ok)).toEqual([]);

    // SQL visibility after the restarts: the run is found by its search attributes.
    const listed = await pixelmill(
      ['list', '--json', '--query', "PixelmillManifest = 'chaos'"],
      {},
      namespace,
    );
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { status: 'COMPLETED', items: CHAOS_ITEMS, completed: CHAOS_ITEMS, failed: 0 },
    ]);
  }, 600_000);
});
