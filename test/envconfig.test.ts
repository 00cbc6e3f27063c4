// A remote cluster (Temporal Cloud, a self-hosted one) chosen through Temporal's envconfig alone,
// end to end with the built CLI. A local dev server stands in for the cluster and is set up the
// way docker-compose sets one up (deploy/temporal/init.sh: a namespace of its own and pixelmill's
// search attributes); then `pixelmill worker`, `run --wait` and `status` reach it through
// TEMPORAL_ADDRESS + TEMPORAL_NAMESPACE, a TEMPORAL_PROFILE in a temporal.toml, or with an API key.
// How temporal/connection.ts reads the settings is tested in connection.test.ts.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, WorkflowNotFoundError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MANIFEST_ATTRIBUTE, PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { DEMO_API_KEY } from '../emulator/index.js';
import { resolveTemporalExecutable } from '../temporal/binaries.js';
import { INDEXED_VALUE_TYPES } from '../temporal/server-admin.js';
import { readReport } from '../bench/catalog-audit.js';
import { startCatalogHarness, writeCatalog, type CatalogHarness } from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';
import { CLI, collectOutput, type CliResult } from './support/cli.js';

const NAMESPACE = 'pixelmill-envconfig';
const INIT_SCRIPT = fileURLToPath(new URL('../deploy/temporal/init.sh', import.meta.url));

let harness: CatalogHarness;
let home: string;
/** This process's environment without any Temporal or pixelmill setting of the machine. */
let baseEnv: NodeJS.ProcessEnv;

beforeAll(async () => {
  home = mkdtempSync(join(tmpdir(), 'pixelmill-envconfig-'));
  baseEnv = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(TEMPORAL|PIXELMILL|AWS)_/.test(name) && name !== 'XDG_CONFIG_HOME',
      ),
    ),
    // A config dir without a temporal.toml: only what a test sets can name the cluster.
    HOME: home,
  };
  harness = await startCatalogHarness();
}, 60_000);

afterAll(() => rmSync(home, { recursive: true, force: true }));

function runProcess(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<CliResult> {
  return collectOutput(spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] }));
}

function pixelmill(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return runProcess(process.execPath, [CLI, ...args], { ...baseEnv, ...env }, harness.dir);
}

function runInit(searchAttributes: string): Promise<CliResult> {
  const resolved = resolveTemporalExecutable('cli').executable;
  if (resolved.type !== 'existing-path') throw new Error('no Temporal CLI binary for init.sh');
  return runProcess(
    'sh',
    [INIT_SCRIPT],
    {
      ...baseEnv,
      PATH: `${dirname(resolved.path)}${delimiter}${process.env.PATH ?? ''}`,
      TEMPORAL_ADDRESS: harness.env.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      PIXELMILL_SEARCH_ATTRIBUTES: searchAttributes,
    },
    harness.dir,
  );
}

const pixelmillAttributes = PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => `${name}=${type}`).join(' ');

describe('a cluster named by envconfig, set up as docker-compose sets one up', () => {
  it('deploy/temporal/init.sh creates the namespace and registers exactly the search attributes, idempotently', async () => {
    const first = await runInit(pixelmillAttributes);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`creating namespace ${NAMESPACE}`);

    const { customAttributes } = await harness.env.connection.operatorService.listSearchAttributes({
      namespace: NAMESPACE,
    });
    const registered = Object.fromEntries(
      Object.entries(customAttributes ?? {}).map(([name, type]) => [name, Number(type)]),
    );
    expect(registered).toEqual(
      Object.fromEntries(
        PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => [name, INDEXED_VALUE_TYPES[type]]),
      ),
    );

    const again = await runInit(pixelmillAttributes);
    expect(again.code).toBe(0);
    expect(again.stdout).not.toContain('creating namespace');

    const conflicting = await runInit('PixelmillItems=Keyword');
    expect(conflicting.code).not.toBe(0);
    expect(conflicting.stderr).toMatch(/PixelmillItems.*different type/);
  }, 120_000);

  it('runs a catalog with `pixelmill worker` and `run --wait` reaching it by TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE only', async () => {
    const { env, emulator, dir } = harness;
    const cluster = { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: NAMESPACE };
    const worker = spawn(process.execPath, [CLI, 'worker'], {
      cwd: dir,
      env: { ...baseEnv, ...cluster, PIXELMILL_API_BASE_URL: emulator.url, PIXELMILL_API_KEY: DEMO_API_KEY },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let workerOutput = '';
    worker.stdout.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    worker.stderr.on('data', (chunk: Buffer) => (workerOutput += chunk.toString()));
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    try {
      await waitUntil(
        'the worker to connect',
        () => {
          if (worker.exitCode !== null) throw new Error(`pixelmill worker exited:\n${workerOutput}`);
          return workerOutput.includes('pixelmill worker connected');
        },
        60_000,
      );
      expect(workerOutput).toContain(`connected to ${env.address} (namespace ${NAMESPACE})`);

      const catalog = writeCatalog(dir, {
        name: 'envconfig',
        baseUrl: emulator.url,
        items: Array.from({ length: 4 }, (_, i) => ({ id: `e${i}`, prompt: `envconfig product ${i}` })),
      });
      // This machine has no API key: the run names the account the worker serves, by its id.
      const account = /serving API account (a[0-9a-f]{16}) \(/.exec(workerOutput)?.[1];
      expect(account, workerOutput).toBeDefined();
      expect(workerOutput).not.toContain(DEMO_API_KEY);
      const run = await pixelmill(
        ['run', catalog.file, '--wait', '--no-progress', '--api-account', account!],
        cluster,
      );
      expect(run.stderr).toContain(`on ${env.address} (namespace ${NAMESPACE})`);
      expect(run.code).toBe(0);
      const report = readReport(catalog);
      expect(report.map((line) => [line.id, line.status])).toEqual(
        [0, 1, 2, 3].map((i) => [`e${i}`, 'completed']),
      );

      // The run lives in the configured namespace, indexed by the attributes init.sh registered.
      const inNamespace = new Client({ connection: env.connection, namespace: NAMESPACE });
      const description = await inNamespace.workflow.getHandle(catalog.runId).describe();
      expect(description.status.name).toBe('COMPLETED');
      expect(description.typedSearchAttributes.get(MANIFEST_ATTRIBUTE)).toBe('envconfig');
      await expect(env.client.workflow.getHandle(catalog.runId).describe()).rejects.toBeInstanceOf(
        WorkflowNotFoundError,
      );
    } finally {
      if (worker.exitCode === null) worker.kill('SIGTERM');
      await exited;
    }
  }, 180_000);

  // The run of the previous test, looked up the other ways a cluster can be named.
  it('finds the run through a TEMPORAL_PROFILE of a temporal.toml, and through an API key', async () => {
    const { env } = harness;
    const configFile = join(home, 'ops.toml');
    writeFileSync(
      configFile,
      `[profile.ops]\naddress = "${env.address}"\nnamespace = "${NAMESPACE}"\n\n` +
        `[profile.default]\naddress = "127.0.0.1:1"\n`,
    );
    const byProfile = await pixelmill(['status', 'pixelmill/envconfig', '--json'], {
      TEMPORAL_CONFIG_FILE: configFile,
      TEMPORAL_PROFILE: 'ops',
      // The cluster's own Web UI, named for links (a trailing slash is tolerated).
      PIXELMILL_TEMPORAL_UI_URL: 'https://temporal-ui.example.test/',
    });
    expect(byProfile.stderr).toBe('');
    expect(byProfile.code).toBe(0);
    expect(JSON.parse(byProfile.stdout)).toMatchObject({
      runId: 'pixelmill/envconfig',
      status: 'COMPLETED',
      ui: `https://temporal-ui.example.test/namespaces/${NAMESPACE}/workflows/pixelmill%2Fenvconfig`,
    });

    // An API key turns TLS on by default; the dev server speaks plain gRPC and ignores the key.
    const secret = 'tmprl-envconfig-secret-0123456789';
    const byKey = await pixelmill(['status', 'envconfig'], {
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: NAMESPACE,
      TEMPORAL_API_KEY: secret,
      TEMPORAL_TLS: 'false',
    });
    expect(byKey.code).toBe(0);
    expect(byKey.stdout).toContain('pixelmill/envconfig: completed');
    expect(`${byKey.stdout}${byKey.stderr}`).not.toContain(secret);

    // The namespace is honoured, not defaulted: the run is not in `default`.
    const elsewhere = await pixelmill(['status', 'envconfig'], { TEMPORAL_ADDRESS: env.address });
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toMatch(/^pixelmill: no run pixelmill\/envconfig on this Temporal/);
  }, 120_000);
});
