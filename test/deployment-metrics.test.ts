// The compose stack's metrics, without a Docker engine: Docker Compose itself (as in
// deployment-compose.test.ts) reads docker-compose.yml, and its normalized model is checked for
// the wiring an operator relies on: every worker serves its metrics where Prometheus scrapes them,
// Prometheus and Grafana are pinned and mount the files deploy/ holds, Grafana's data source is
// that Prometheus and its dashboard provider loads the dashboard from where it is mounted, and the
// dashboard queries the data source provisioned for it. That the dashboard's queries name metrics
// a worker really exports is worker-metrics.test.ts's (from a real scrape).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface ComposeService {
  image?: string;
  command?: string[] | null;
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: { target: number; published?: string; host_ip?: string }[];
  volumes?: { type: string; source: string; target: string; read_only?: boolean }[];
}

interface PrometheusConfig {
  scrape_configs: {
    job_name: string;
    dns_sd_configs?: { names: string[]; type: string; port: number }[];
  }[];
}

let services: Record<string, ComposeService>;
let scratch: string;

beforeAll(() => {
  const install = spawnSync(process.execPath, [join(ROOT, 'deploy/install-compose.mjs')], {
    encoding: 'utf8',
  });
  if (install.status !== 0) throw new Error(`deploy/install-compose.mjs failed: ${install.stderr}`);
  scratch = mkdtempSync(join(tmpdir(), 'pixelmill-compose-metrics-'));
  const envFile = join(scratch, 'empty.env');
  writeFileSync(envFile, '');
  // Neither this machine's env nor a developer's `.env` may decide what the test sees.
  const args = ['--project-directory', ROOT, '-f', join(ROOT, 'docker-compose.yml'), '--env-file', envFile];
  const config = spawnSync(
    install.stdout.trim(),
    [...args, '--profile', 's3', 'config', '--format', 'json'],
    { encoding: 'utf8', env: { PATH: process.env.PATH ?? '', HOME: scratch } },
  );
  if (config.status !== 0) throw new Error(`docker-compose config failed: ${config.stderr}`);
  services = (JSON.parse(config.stdout) as { services: Record<string, ComposeService> }).services;
}, 300_000);

afterAll(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

function service(name: string): ComposeService {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

/** The host folder mounted read-only at `target` in `svc`. */
function mounted(svc: ComposeService, target: string): string {
  const mount = svc.volumes?.find((volume) => volume.target === target);
  expect(mount, target).toMatchObject({ type: 'bind', read_only: true });
  return mount!.source;
}

const yamlFile = <T>(path: string): T => parseYaml(readFileSync(path, 'utf8')) as T;

describe('the compose stack’s metrics', () => {
  it('has every worker serve its metrics where Prometheus scrapes each replica', () => {
    const prometheus = service('prometheus');
    const configFlag = prometheus.command?.find((arg) => arg.startsWith('--config.file='));
    const configPath = configFlag!.slice('--config.file='.length);
    const configDir = mounted(prometheus, '/etc/prometheus');
    const config = yamlFile<PrometheusConfig>(join(configDir, configPath.replace('/etc/prometheus/', '')));
    for (const name of ['worker', 's3-worker']) {
      const worker = service(name);
      // Every interface of the container: Prometheus reaches it over the compose network.
      expect(worker.environment?.PIXELMILL_METRICS_HOST, name).toBe('0.0.0.0');
      const port = Number(worker.environment?.PIXELMILL_METRICS_PORT);
      const job = config.scrape_configs.find((scrape) =>
        scrape.dns_sd_configs?.some((sd) => sd.names.includes(name)),
      );
      // By DNS, so that `--scale worker=3` gives three targets; on the port the worker serves.
      expect(job?.dns_sd_configs, name).toEqual([
        expect.objectContaining({ names: [name], type: 'A', port }),
      ]);
      // Scraped inside the network: a scaled worker publishes no host port.
      expect(worker.ports ?? [], name).toEqual([]);
    }
  });

  it('runs Prometheus and Grafana pinned, Grafana once Prometheus is ready, on the host’s loopback only', () => {
    const prometheus = service('prometheus');
    const grafana = service('grafana');
    expect(prometheus.image).toMatch(/^prom\/prometheus:v\d+\.\d+\.\d+$/);
    expect(grafana.image).toMatch(/^grafana\/grafana:\d+\.\d+\.\d+$/);
    expect(prometheus.healthcheck?.test.join(' ')).toContain('/-/ready');
    expect(grafana.depends_on).toEqual({
      prometheus: expect.objectContaining({ condition: 'service_healthy' }),
    });
    for (const svc of [prometheus, grafana])
      for (const port of svc.ports ?? []) expect(port.host_ip).toBe('127.0.0.1');
  });

  it('provisions Grafana with that Prometheus and the dashboard, which queries it', () => {
    const grafana = service('grafana');
    const prometheus = service('prometheus');
    const provisioning = mounted(grafana, '/etc/grafana/provisioning');
    const dashboardsDir = '/etc/grafana/dashboards';
    const dashboards = mounted(grafana, dashboardsDir);

    const { datasources } = yamlFile<{ datasources: { uid: string; type: string; url: string }[] }>(
      join(provisioning, 'datasources', 'prometheus.yml'),
    );
    expect(datasources).toHaveLength(1);
    const [source] = datasources;
    const url = new URL(source!.url);
    expect(source!.type).toBe('prometheus');
    expect(url.hostname).toBe('prometheus');
    expect(prometheus.ports?.map((port) => port.target)).toContain(Number(url.port));

    const { providers } = yamlFile<{ providers: { type: string; options: { path: string } }[] }>(
      join(provisioning, 'dashboards', 'pixelmill.yml'),
    );
    expect(providers).toEqual([expect.objectContaining({ type: 'file', options: { path: dashboardsDir } })]);
    const home = grafana.environment?.GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH ?? '';
    expect(home.startsWith(`${dashboardsDir}/`)).toBe(true);
    const file = join(dashboards, home.slice(dashboardsDir.length + 1));
    expect(existsSync(file)).toBe(true);

    // Every query of every panel (and of the variables) goes to the provisioned data source.
    const dashboard = JSON.parse(readFileSync(file, 'utf8')) as {
      uid: string;
      panels: { type: string; datasource?: { uid: string }; targets?: { datasource?: { uid: string } }[] }[];
      templating: { list: { datasource?: { uid: string } }[] };
    };
    expect(dashboard.uid).toBe('pixelmill-workers');
    const queried = dashboard.panels.filter((panel) => panel.type !== 'row');
    expect(queried.length).toBeGreaterThan(10);
    for (const panel of queried) {
      expect(panel.datasource?.uid).toBe(source!.uid);
      for (const target of panel.targets ?? []) expect(target.datasource?.uid).toBe(source!.uid);
    }
    for (const variable of dashboard.templating.list) expect(variable.datasource?.uid).toBe(source!.uid);
  });
});
