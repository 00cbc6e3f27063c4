// The processes a chaos run disrupts, as a user would deploy them on one machine: a Temporal (a
// persisted dev server under `<dir>/temporal`, or a real cluster handed over: chaos-temporal.ts),
// N `pixelmill worker` processes and one `pixelmill webhook-server`, all pointed at it by
// Temporal's environment variables; in a shared-nothing deployment those run in mount namespaces
// that hide the run's folder. The harness SIGKILLs workers, cuts one off from the frontend
// (chaos-proxy.ts) and has the Temporal side fail through this module; a process that exits by
// itself is noticed and restarted too, and every such restart is counted (a worker that dies when
// the server goes away is a finding, not something to hide).
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CHAOS_API_KEY, CHAOS_WEBHOOK_SECRET } from './chaos-config.js';
import { PartitionProxy } from './chaos-proxy.js';
import { startDevServerTemporal, type ChaosTemporal, type ServerFaultKind } from './chaos-temporal.js';
import { exited, spawnIsolatedNode, spawnNode, stopChild } from './processes.js';

const READY_TIMEOUT_MS = 60_000;
/**
 * What the Temporal SDK's core (1.24) logs when the server refuses a task's completion because the
 * task is no longer the worker's: an activity timed out and retried elsewhere, a workflow task
 * handed to another worker.
 */
const REFUSED_COMPLETION = /Activity not found on completion|Task not found when completing/g;

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
  /** Workers (by index) that reach the frontend through a proxy the harness can cut (cutOff). */
  cutOff?: readonly number[];
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
  private workers: Managed[] = [];
  /** Every process started, dead ones included, for their logs. */
  private started: Managed[] = [];
  private receiver: Managed | undefined;
  private receiverPort: number | undefined;
  private stopping = false;
  private readonly cutOffs: (() => number)[] = [];

  private constructor(
    /** Where the run happens; stopped with the processes. */
    readonly temporal: ChaosTemporal,
    private readonly proxies: ReadonlyMap<number, PartitionProxy>,
    private readonly cwd: string,
    private readonly cli: string,
    /** The API the workers serve (they serve one account: this base URL with the chaos key). */
    private readonly apiBaseUrl: string,
    private readonly log: (line: string) => void,
    private readonly deployment: Deployment,
  ) {}

  /** Starts on `temporal`, or on a dev server of its own in `dir`, and the proxies of `deployment.cutOff`. */
  static async start(
    dir: string,
    cli: string,
    apiBaseUrl: string,
    log: (line: string) => void,
    deployment: Deployment = {},
    temporal?: ChaosTemporal,
  ): Promise<ChaosCluster> {
    const target = temporal ?? (await startDevServerTemporal(dir));
    const proxies = new Map<number, PartitionProxy>();
    for (const index of new Set(deployment.cutOff ?? []))
      proxies.set(index, await PartitionProxy.start(target.address));
    return new ChaosCluster(target, proxies, dir, cli, apiBaseUrl, log, deployment);
  }

  /** `worker` is the index of a worker (its proxy's address replaces the frontend's), else undefined. */
  private env(worker?: number): NodeJS.ProcessEnv {
    const proxy = worker === undefined ? undefined : this.proxies.get(worker);
    return {
      ...process.env,
      ...this.temporal.env,
      ...(proxy ? { TEMPORAL_ADDRESS: proxy.address } : {}),
      PIXELMILL_API_KEY: CHAOS_API_KEY,
      ...(this.deployment.apiKey ? { [this.deployment.apiKey.env]: this.deployment.apiKey.value } : {}),
      PIXELMILL_API_BASE_URL: this.apiBaseUrl,
      PIXELMILL_WEBHOOK_SECRET: CHAOS_WEBHOOK_SECRET,
      PIXELMILL_WEBHOOK_URL: '',
      ...this.deployment.env,
    };
  }

  /** Has the Temporal side suffer `kind`; resolves once it serves again, with how long that took. */
  async serverFault(kind: ServerFaultKind): Promise<{ downMs: number }> {
    const fault = this.temporal.faults[kind];
    if (!fault) throw new Error(`this Temporal cannot suffer ${kind}`);
    const started = Date.now();
    await fault();
    return { downMs: Date.now() - started };
  }

  /**
   * Cuts worker `index` off from the frontend for `ms` (its proxy forwards nothing), then heals
   * the link. Resolves after the heal with the connections the cut froze and those made meanwhile.
   */
  async cutOff(index: number, ms: number): Promise<{ openAtCut: number; acceptedWhileCut: number }> {
    const proxy = this.proxies.get(index);
    if (!proxy)
      throw new Error(`worker ${index} does not reach Temporal through a proxy (Deployment.cutOff)`);
    const worker = this.workers[index];
    const outputAtCut = worker?.output.length ?? 0;
    proxy.cut();
    const { openAtCut } = proxy.counts;
    const acceptedBefore = proxy.counts.acceptedWhileCut;
    await sleep(ms);
    proxy.heal();
    this.cutOffs.push(() => worker?.output.slice(outputAtCut).match(REFUSED_COMPLETION)?.length ?? 0);
    return { openAtCut, acceptedWhileCut: proxy.counts.acceptedWhileCut - acceptedBefore };
  }

  /**
   * For each cut-off so far, in order: the completions Temporal refused the worker once it was
   * reconnected, tasks it finished while cut that the server had meanwhile timed out and handed to
   * another worker (the work the cut froze). Read after the run: they come in after the heal.
   */
  completionsRefusedAfterCutOffs(): number[] {
    return this.cutOffs.map((count) => count());
  }

  /** Spawns a `pixelmill` child and resolves once `readyText` appears on its stdout. */
  private async spawn(
    name: string,
    args: string[],
    readyText: RegExp,
    onExit: (managed: Managed) => void,
    env: NodeJS.ProcessEnv = this.env(),
  ) {
    const { hidden } = this.deployment;
    const child = hidden
      ? spawnIsolatedNode([this.cli, ...args], hidden, { env })
      : spawnNode([this.cli, ...args], { cwd: this.cwd, env });
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
      this.env(index),
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

  /** Writes every process's output to `<dir>/logs/<name>.log` (Temporal's logs are in its stateDir). */
  writeLogs(dir: string): string {
    const logs = join(dir, 'logs');
    mkdirSync(logs, { recursive: true });
    for (const managed of this.started) writeFileSync(join(logs, `${managed.name}.log`), managed.output);
    return logs;
  }

  /** Stops every process, the proxies, and the Temporal side if it is the harness's own. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.workers, this.receiver].map(async (managed) => {
        if (!managed) return;
        managed.killedByHarness = true;
        await stopChild(managed.child, 5_000);
      }),
    );
    await Promise.all([...this.proxies.values()].map((proxy) => proxy.close()));
    await this.temporal.stop();
  }
}
