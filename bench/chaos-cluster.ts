// The processes a chaos run disrupts, as a user would deploy them on one machine: a persisted
// Temporal dev server (SQLite under `<dir>/temporal`), N `pixelmill worker` processes and one
// `pixelmill webhook-server`, all pointed at it with TEMPORAL_ADDRESS; in a shared-nothing
// deployment those run in mount namespaces that hide the run's folder. The harness SIGKILLs
// workers and restarts the server through this module; a process that exits by itself is noticed
// and restarted too, and every such restart is counted (a worker that dies when the server goes
// away is a finding, not something to hide).
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureDevServer, stopDevServer } from '../temporal/dev-server.js';
import { CHAOS_API_KEY, CHAOS_WEBHOOK_SECRET } from './chaos-config.js';
import { exited, freePort, registerDevServer, spawnIsolatedNode, spawnNode, stopChild } from './processes.js';

const READY_TIMEOUT_MS = 60_000;

/** How the pixelmill processes are deployed: beside the run's folder, or as on other machines. */
export interface Deployment {
  /** Hide this folder from workers and receiver (a mount namespace each): they share nothing with the CLI. */
  hidden?: string;
  /** More environment for them, e.g. the object store's credentials. */
  env?: NodeJS.ProcessEnv;
  /**
   * The API key the workers serve, and the variable they read it from (`--api-key-env`): a
   * provider's own (`FAL_KEY`, ...). Default: the first API's chaos key in PIXELMILL_API_KEY.
   */
  apiKey?: { env: string; value: string };
}

interface Managed {
  /** e.g. `worker-0-2`: the third process started as worker 0. */
  name: string;
  child: ChildProcess;
  output: string;
  /** Set when the harness killed it on purpose. */
  killedByHarness: boolean;
}

export interface ClusterEvents {
  /** Worker processes that exited although nobody killed them (the harness started a new one). */
  workerExits: string[];
  webhookServerExits: string[];
}

export class ChaosCluster {
  readonly events: ClusterEvents = { workerExits: [], webhookServerExits: [] };
  readonly address: string;
  private workers: Managed[] = [];
  /** Every process started, dead ones included, for their logs. */
  private started: Managed[] = [];
  private receiver: Managed | undefined;
  private receiverPort: number | undefined;
  private stopping = false;

  private constructor(
    private readonly stateDir: string,
    private readonly ports: { port: number; uiPort: number },
    private readonly cwd: string,
    private readonly cli: string,
    /** The API the workers serve (they serve one account: this base URL with the chaos key). */
    private readonly apiBaseUrl: string,
    private readonly log: (line: string) => void,
    private readonly deployment: Deployment,
  ) {
    this.address = `127.0.0.1:${ports.port}`;
  }

  /** Starts the dev server on fixed free ports (a restart must come back at the same address). */
  static async start(
    dir: string,
    cli: string,
    apiBaseUrl: string,
    log: (line: string) => void,
    deployment: Deployment = {},
  ): Promise<ChaosCluster> {
    const stateDir = join(dir, 'temporal');
    const cluster = new ChaosCluster(
      stateDir,
      { port: await freePort(), uiPort: await freePort() },
      dir,
      cli,
      apiBaseUrl,
      log,
      deployment,
    );
    registerDevServer(stateDir);
    await cluster.startServer();
    return cluster;
  }

  private env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      TEMPORAL_ADDRESS: this.address,
      TEMPORAL_NAMESPACE: 'default',
      PIXELMILL_API_KEY: CHAOS_API_KEY,
      ...(this.deployment.apiKey ? { [this.deployment.apiKey.env]: this.deployment.apiKey.value } : {}),
      PIXELMILL_API_BASE_URL: this.apiBaseUrl,
      PIXELMILL_WEBHOOK_SECRET: CHAOS_WEBHOOK_SECRET,
      PIXELMILL_WEBHOOK_URL: '',
      ...this.deployment.env,
    };
  }

  private async startServer(): Promise<void> {
    await ensureDevServer({ stateDir: this.stateDir, ...this.ports, startTimeoutMs: 60_000 });
  }

  /** Stops the dev server (SIGTERM, as an orchestrator would) and starts it on the same state. */
  async restartServer(): Promise<{ downMs: number }> {
    const started = Date.now();
    await stopDevServer(this.stateDir);
    this.log(`chaos: Temporal dev server stopped; starting it again on ${this.stateDir}`);
    await this.startServer();
    return { downMs: Date.now() - started };
  }

  /** Spawns a `pixelmill` child and resolves once `readyText` appears on its stdout. */
  private async spawn(name: string, args: string[], readyText: RegExp, onExit: (managed: Managed) => void) {
    const { hidden } = this.deployment;
    const child = hidden
      ? spawnIsolatedNode([this.cli, ...args], hidden, { env: this.env() })
      : spawnNode([this.cli, ...args], { cwd: this.cwd, env: this.env() });
    const sameName = this.started.filter((managed) => managed.name.startsWith(`${name}-`)).length;
    const managed: Managed = { name: `${name}-${sameName}`, child, output: '', killedByHarness: false };
    this.started.push(managed);
    let isReady = false;
    const ready = new Promise<RegExpExecArray>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`pixelmill ${args[0]} not ready in time:\n${managed.output}`)),
        READY_TIMEOUT_MS,
      );
      const onData = (chunk: Buffer): void => {
        managed.output += chunk.toString();
        const match = readyText.exec(managed.output);
        if (match && !isReady) {
          isReady = true;
          clearTimeout(timer);
          resolve(match);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (chunk: Buffer) => (managed.output += chunk.toString()));
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(
          new Error(
            `pixelmill ${args[0]} exited (${signal ?? code}) before it was ready:\n${managed.output}`,
          ),
        );
        // Before it was ready the caller sees the rejection; after, only this notices.
        if (isReady && !managed.killedByHarness && !this.stopping) onExit(managed);
      });
    });
    return { managed, match: await ready };
  }

  /** Starts worker `index` (replacing whatever ran under that index). */
  async startWorker(index: number): Promise<void> {
    const { managed } = await this.spawn(
      `worker-${index}`,
      [
        'worker',
        '--identity',
        `chaos-worker-${index}-${Date.now()}`,
        ...(this.deployment.apiKey ? ['--api-key-env', this.deployment.apiKey.env] : []),
      ],
      /pixelmill worker connected/,
      (dead) => {
        const tail = dead.output.trim().split('\n').slice(-3).join(' | ');
        this.events.workerExits.push(`worker ${index} exited by itself (${dead.child.exitCode}): ${tail}`);
        this.log(`chaos: worker ${index} exited by itself; the harness starts a new one`);
        void this.startWorker(index).catch((error: unknown) => this.log(`chaos: ${String(error)}`));
      },
    );
    this.workers[index] = managed;
  }

  /** SIGKILLs worker `index`, waits until it is gone, and starts a new one in its place. */
  async killWorker(index: number): Promise<void> {
    const victim = this.workers[index];
    if (victim) {
      victim.killedByHarness = true;
      victim.child.kill('SIGKILL');
      await exited(victim.child);
    }
    await this.startWorker(index);
  }

  /** Starts the webhook receiver (on a free port the first time); resolves with its address. */
  async startWebhookServer(port = this.receiverPort ?? 0): Promise<string> {
    const { managed, match } = await this.spawn(
      'webhook-server',
      ['webhook-server', '--port', String(port)],
      /listening on (http:\/\/\S+),/,
      (dead) => {
        this.events.webhookServerExits.push(`webhook-server exited by itself (${dead.child.exitCode})`);
        this.log('chaos: the webhook server exited by itself; the harness starts a new one');
        void this.startWebhookServer().catch((error: unknown) => this.log(`chaos: ${String(error)}`));
      },
    );
    this.receiver = managed;
    const url = match[1]!;
    this.receiverPort = Number(new URL(url).port);
    return url;
  }

  /** SIGKILLs the receiver and starts it again on the same port (the run's webhook address) after `ms`. */
  async webhookOutage(ms: number): Promise<void> {
    const receiver = this.receiver;
    if (!receiver || this.receiverPort === undefined) return;
    receiver.killedByHarness = true;
    receiver.child.kill('SIGKILL');
    await exited(receiver.child);
    await sleep(ms);
    await this.startWebhookServer(this.receiverPort);
  }

  /** Writes every process's output to `<dir>/logs/<name>.log` (the server's log is in its state folder). */
  writeLogs(dir: string): string {
    const logs = join(dir, 'logs');
    mkdirSync(logs, { recursive: true });
    for (const managed of this.started) writeFileSync(join(logs, `${managed.name}.log`), managed.output);
    return logs;
  }

  /** Stops every process and the dev server. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.workers, this.receiver].map(async (managed) => {
        if (!managed) return;
        managed.killedByHarness = true;
        await stopChild(managed.child, 5_000);
      }),
    );
    await stopDevServer(this.stateDir).catch(() => false);
  }
}
