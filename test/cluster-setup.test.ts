// The production path on a real cluster (issue 43): Temporal built from its Go module at the
// version docker-compose.yml pins, four services as separate processes on PostgreSQL with SQL
// visibility (test/support/cluster.ts). `pixelmill setup` makes a fresh namespace ready, a run of
// 20 items on the emulator completes there with `pixelmill worker` and `run --wait`, and `list
// --query` finds it by its search attributes, `status` reads it.
//
// Skipped, saying why, only on a machine without Go (the server cannot be built there).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { ensureNamespace, INDEXED_VALUE_TYPES } from '../temporal/server-admin.js';
import { readReport } from '../bench/catalog-audit.js';
import { FAST_EMULATOR, writeCatalog } from './support/catalog-harness.js';
import { CLI, collectOutput, type CliResult } from './support/cli.js';
import { clusterTools, startTemporalCluster, type TemporalCluster } from './support/cluster.js';
import { startTestEmulator } from './support/emulator.js';
import { waitUntil } from './support/wait.js';

const installed = await clusterTools();
const skipReason = 'skip' in installed ? installed.skip : undefined;

/** A namespace no one has set up: `pixelmill setup` creates it. */
const NAMESPACE = 'catalog-ops';

let cluster: TemporalCluster;
let emulator: RunningEmulator;
let dir: string;
/** This process's environment without any Temporal, pixelmill or AWS setting of the machine. */
let baseEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!('tools' in installed)) return;
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-cluster-setup-'));
  baseEnv = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name) && name !== 'XDG_CONFIG_HOME',
      ),
    ),
    HOME: dir,
  };
  cluster = await startTemporalCluster(installed.tools);
  process.stderr.write(`cluster-setup: the cluster started in ${(cluster.startMs / 1000).toFixed(1)} s\n`);
  emulator = await startTestEmulator(FAST_EMULATOR);
}, 600_000);

afterAll(async () => {
  await cluster?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function pixelmill(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd: dir,
    env: { ...baseEnv, TEMPORAL_ADDRESS: cluster.address, TEMPORAL_NAMESPACE: NAMESPACE, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return collectOutput(child);
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
      TEMPORAL_ADDRESS: cluster.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
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

function catalogOf(name: string, count: number) {
  return writeCatalog(dir, {
    name,
    baseUrl: emulator.url,
    items: Array.from({ length: count }, (_, i) => ({ id: `${name}-${i}`, prompt: `${name} product ${i}` })),
  });
}

const wanted = Object.fromEntries(
  PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => [name, INDEXED_VALUE_TYPES[type]]),
);

describe.skipIf(skipReason !== undefined)(
  `pixelmill on a Temporal cluster on PostgreSQL${skipReason ? ` (skipped: ${skipReason})` : ''}`,
  () => {
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

    it('`pixelmill setup` creates the namespace and the search attributes; a second run says they exist', async () => {
      const first = await pixelmill(['setup']);
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`pixelmill setup: created namespace ${NAMESPACE}`);
      expect(first.stdout).toContain(
        `pixelmill setup: created search attributes in namespace ${NAMESPACE}: `,
      );
      expect(await registeredAttributes(NAMESPACE)).toEqual(wanted);

      const second = await pixelmill(['setup']);
      expect(second.code).toBe(0);
      expect(second.stdout).not.toContain('created');
      expect(second.stdout).toContain(`namespace ${NAMESPACE} already has pixelmill's search attributes`);
      expect(await registeredAttributes(NAMESPACE)).toEqual(wanted);
    }, 60_000);

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
      const result = await pixelmill(['setup'], { TEMPORAL_NAMESPACE: namespace });
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
      // The namespace the cluster support registered, without pixelmill's attributes. An API key
      // turns TLS on by default; this cluster speaks plain gRPC and ignores the key.
      const secret = 'tmprl-cluster-setup-secret-0123456789';
      const result = await pixelmill(['setup'], {
        TEMPORAL_NAMESPACE: cluster.namespace,
        TEMPORAL_API_KEY: secret,
        TEMPORAL_TLS: 'false',
      });
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
      const lines = result.stderr.trim().split('\n');
      expect(lines[0]).toMatch(/^pixelmill: Temporal Cloud adds search attributes through its control plane/);
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

    it('a 20-item run completes on the cluster; `list --query` finds it by its search attributes, `status` reads it', async () => {
      const worker = await startWorker();
      try {
        const catalog = catalogOf('cluster-setup', 20);
        const run = await pixelmill([
          'run',
          catalog.file,
          '--wait',
          '--no-progress',
          '--api-account',
          worker.account,
        ]);
        expect(run.stderr).toContain(`on ${cluster.address} (namespace ${NAMESPACE})`);
        expect(run.code, run.stderr).toBe(0);
        const report = readReport(catalog);
        expect(report).toHaveLength(20);
        expect(report.every((line) => line.status === 'completed')).toBe(true);

        // Found by a custom attribute's value, and only by the right one (SQL visibility).
        const listed = await pixelmill(['list', '--json', '--query', "PixelmillManifest = 'cluster-setup'"]);
        expect(listed.code, listed.stderr).toBe(0);
        expect(JSON.parse(listed.stdout)).toMatchObject([
          { runId: catalog.runId, status: 'COMPLETED', items: 20, completed: 20, failed: 0 },
        ]);
        const byCount = await pixelmill([
          'list',
          '--json',
          '--query',
          'PixelmillCompleted = 20 AND PixelmillFailed = 0',
        ]);
        expect(JSON.parse(byCount.stdout).map((listing: { runId: string }) => listing.runId)).toEqual([
          catalog.runId,
        ]);
        const none = await pixelmill(['list', '--json', '--query', "PixelmillManifest = 'another'"]);
        expect(none.code).toBe(0);
        expect(JSON.parse(none.stdout)).toEqual([]);

        const status = await pixelmill(['status', 'cluster-setup', '--json']);
        expect(status.code, status.stderr).toBe(0);
        expect(JSON.parse(status.stdout)).toMatchObject({ runId: catalog.runId, status: 'COMPLETED' });
      } finally {
        await worker.stop();
      }
    }, 240_000);

    it('after a SIGKILL of the history service and a PostgreSQL restart, runs are read and a new one completes', async () => {
      await cluster.restartHistory();
      await cluster.restartPostgres();
      // Each restart is real: a second start of the history process, a second PostgreSQL start.
      expect(readFileSync(cluster.logs.history, 'utf8').match(/"msg":"Build info\."/g)).toHaveLength(2);
      expect(readFileSync(cluster.logs.postgres, 'utf8').match(/ready to accept connections/g)).toHaveLength(
        2,
      );

      const status = await pixelmill(['status', 'cluster-setup', '--json']);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ status: 'COMPLETED' });

      const worker = await startWorker();
      try {
        const catalog = catalogOf('cluster-restarted', 5);
        const run = await pixelmill([
          'run',
          catalog.file,
          '--wait',
          '--no-progress',
          '--api-account',
          worker.account,
        ]);
        expect(run.code, `${run.stderr}\n${worker.output()}`).toBe(0);
        expect(readReport(catalog).map((line) => line.status)).toEqual(Array(5).fill('completed'));
      } finally {
        await worker.stop();
      }
    }, 240_000);
  },
);
