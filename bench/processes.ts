// The child processes a benchmark starts, and the guarantee that none outlives it: every child and
// every embedded Temporal dev server is registered here and torn down on exit, on SIGINT/SIGTERM
// and on an uncaught failure. Also the /proc reader for a child's peak memory, and a `pixelmill`
// command timed from spawn to exit (timeCli).
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureDevServer, stopDevServer } from '../temporal/dev-server.js';
import { freePort } from '../temporal/dev-server-process.js';

/** The built CLI entry (dist/client/main.js). */
export const CLI = fileURLToPath(new URL('../client/main.js', import.meta.url));

/** How bin/pixelmill.js starts node: the variables and node flags of its shebang. */
export interface CliLaunch {
  env: Record<string, string>;
  nodeFlags: string[];
}

/** Reads a `#!/usr/bin/env -S [NAME=value ...] node [flags]` line (bin/pixelmill.js's first). */
export function parseShebang(shebang: string): CliLaunch {
  const words = shebang
    .replace(/^#!\/usr\/bin\/env -S /, '')
    .split(' ')
    .filter(Boolean);
  const nodeAt = words.indexOf('node');
  if (nodeAt < 0) throw new Error(`not a node shebang: ${shebang}`);
  const env = Object.fromEntries(
    words.slice(0, nodeAt).map((word) => word.split('=', 2) as [string, string]),
  );
  return { env, nodeFlags: words.slice(nodeAt + 1) };
}

/** bin/pixelmill.js's shebang, read from it: the CLI runs here as `npx pixelmill` runs it. */
export function cliLaunch(): CliLaunch {
  const bin = new URL('../../bin/pixelmill.js', import.meta.url); // from dist/bench/
  return parseShebang(readFileSync(bin, 'utf8').split('\n')[0]!);
}

/**
 * Node flags for a V8 CPU profile of each of a process's threads, written to `dir` as it exits
 * (node refuses --cpu-prof in NODE_OPTIONS, so it goes on the command line).
 */
function profileFlags(dir: string | undefined): string[] {
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}

/**
 * `pixelmill <args>` as a child process, profiled into `cpuProfileDir`; with
 * PIXELMILL_BENCH_CPU_PROF=<dir>, every CLI child (the run, the emulator) is profiled there.
 */
export function spawnCli(
  args: string[],
  options: SpawnOptions = {},
  cpuProfileDir = process.env.PIXELMILL_BENCH_CPU_PROF,
): ChildProcess {
  return spawnLikeCli([...profileFlags(cpuProfileDir), CLI, ...args], options);
}

/** `node <args>` with the CLI's shebang variables and node flags: a process that measures like it. */
export function spawnLikeCli(args: string[], options: SpawnOptions = {}): ChildProcess {
  const { env, nodeFlags } = cliLaunch();
  return spawnNode([...nodeFlags, ...args], { ...options, env: { ...(options.env ?? process.env), ...env } });
}

const children = new Set<ChildProcess>();
const devServerDirs = new Set<string>();

/** Registers `child` for cleanup until it exits. */
function tracked(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Spawns `node <args>` and registers it for cleanup. */
export function spawnNode(args: string[], options: SpawnOptions = {}): ChildProcess {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
  return tracked(child);
}

/**
 * `node <args>` as on a machine of its own: in a new mount namespace (root only: `unshare -m`)
 * with a private tmpfs over `hidden`, so it sees none of the files under that folder while it
 * shares loopback with everything else. Its HOME, working folder and TMPDIR are in that tmpfs.
 */
export function spawnIsolatedNode(args: string[], hidden: string, options: SpawnOptions = {}): ChildProcess {
  const script =
    'mount -t tmpfs tmpfs "$HIDDEN" && mkdir -p "$HIDDEN/home" "$HIDDEN/work" "$HIDDEN/tmp" && ' +
    'cd "$HIDDEN/work" && exec "$@"';
  // unshare and sh exec into node: the child's pid is the node process's, so a SIGKILL kills it.
  const child = spawn(
    'unshare',
    ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', process.execPath, ...args],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...options,
      env: {
        ...(options.env ?? process.env),
        HIDDEN: hidden,
        HOME: join(hidden, 'home'),
        TMPDIR: join(hidden, 'tmp'),
      },
    },
  );
  return tracked(child);
}

/** Resolves with the exit code once `child` has exited (at once if it already has). */
export async function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}

/**
 * `pixelmill run`'s exit, SIGINTed at `deadline` (epoch ms) if it has not exited by then: SIGINT
 * makes the CLI stop watching and shut its workers down cleanly; the run stays durable.
 */
export async function exitedBy(
  cli: ChildProcess,
  deadline: number,
): Promise<{ code: number | null; interrupted: boolean }> {
  let interrupted = false;
  const timer = setTimeout(
    () => {
      interrupted = true;
      cli.kill('SIGINT');
    },
    Math.max(0, deadline - Date.now()),
  );
  const code = await exited(cli);
  clearTimeout(timer);
  return { code, interrupted };
}

/** A `pixelmill` command run to its exit: its code, what it wrote, and what it cost. */
export interface CliTiming {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr as they came. */
  output: string;
  /** Spawn to exit. */
  seconds: number;
  /** CPU seconds (user and system) of the process. */
  cpuSeconds: number;
  /** Its peak resident memory (the kernel's high-water mark). */
  peakRssMb: number;
}

/** Runs `pixelmill <args>` to its exit, timed from spawn, its memory and CPU sampled every 50 ms. */
export async function timeCli(args: string[], options: SpawnOptions = {}): Promise<CliTiming> {
  const started = performance.now();
  const child = spawnCli(args, options);
  const sampler = new ProcessSampler(child.pid!, 50);
  let stdout = '';
  let stderr = '';
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output += chunk.toString();
  });
  const code = await exited(child);
  const seconds = (performance.now() - started) / 1000;
  const peakRssMb = sampler.stop();
  return { code, stdout, stderr, output, seconds, cpuSeconds: sampler.cpuSeconds(), peakRssMb };
}

/** SIGTERM, then SIGKILL if it is still alive after `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 5_000, signal: NodeJS.Signals = 'SIGTERM') {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited(child);
  clearTimeout(timer);
}

/** Remembers a state folder whose embedded dev server must be stopped at the end. */
export function registerDevServer(stateDir: string): void {
  devServerDirs.add(stateDir);
}

/**
 * A Temporal dev server in `stateDir`, registered for clean-up, and the environment that points a
 * `pixelmill` child at it. Started before a measured run, so its start-up is not measured.
 */
export async function startDevServerIn(stateDir: string): Promise<{
  server: Awaited<ReturnType<typeof ensureDevServer>>;
  env: NodeJS.ProcessEnv;
}> {
  const port = await freePort();
  const uiPort = await freePort();
  registerDevServer(stateDir);
  const server = await ensureDevServer({ stateDir, port, uiPort });
  const env = {
    PIXELMILL_STATE_DIR: stateDir,
    PIXELMILL_TEMPORAL_PORT: String(port),
    PIXELMILL_TEMPORAL_UI_PORT: String(uiPort),
    TEMPORAL_ADDRESS: '',
  };
  return { server, env };
}

export async function stopRegisteredDevServer(stateDir: string): Promise<void> {
  devServerDirs.delete(stateDir);
  await stopDevServer(stateDir).catch(() => false);
}

/** Stops everything still registered. Safe to call more than once. */
export async function cleanUpAll(): Promise<void> {
  await Promise.all([...children].map((child) => stopChild(child, 3_000)));
  await Promise.all([...devServerDirs].map((dir) => stopRegisteredDevServer(dir)));
}

let installed = false;
/** On SIGINT/SIGTERM: clean up, then exit 130. */
export function cleanUpOnSignals(): void {
  if (installed) return;
  installed = true;
  const onSignal = (): void => {
    process.stderr.write('bench: interrupted; stopping child processes\n');
    void cleanUpAll().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

export { freePort };

/**
 * Where a process's CPU goes, by thread: node's main thread; libvips's workers (sharp's decodes);
 * the Temporal core's Rust runtime; and node's other threads, which /proc does not tell apart
 * (the libuv pool running file I/O and sharp's pipelines, V8's GC and compiler helpers, a
 * worker_threads thread such as the workflow sandbox's).
 */
export type ThreadGroup = 'main' | 'libvips' | 'temporal_core' | 'other_node';

function threadGroup(isMain: boolean, name: string): ThreadGroup {
  if (isMain) return 'main';
  if (name.startsWith('libvips')) return 'libvips';
  if (name.startsWith('tokio')) return 'temporal_core';
  return 'other_node';
}

/** A /proc stat file's command name and CPU ticks (fields 14 and 15, utime and stime). */
function cpuTicksOf(file: string): { name: string; ticks: number } {
  // The command name, in parentheses, may hold spaces: the fields are counted after its end.
  const stat = readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    ticks: Number(fields[11]) + Number(fields[12]),
  };
}

/** Clock ticks per second of /proc's CPU times: USER_HZ, 100 on every Linux ABI node runs on. */
const USER_HZ = 100;

/**
 * Tracks a process's peak resident memory and its CPU time from /proc. VmHWM is the kernel's own
 * high-water mark, so sampling only has to catch the last reading before the process exits; the
 * CPU time is what the process used between the first and the last reading (one interval of it
 * may be missed at exit).
 */
export class ProcessSampler {
  private peakKb = 0;
  private firstCpuTicks: number | undefined;
  private lastCpuTicks = 0;
  /** With `threads`: each thread's ticks when first seen in the first sample, and its last group and ticks. */
  private readonly threadFirst = new Map<string, number>();
  private readonly threadLast = new Map<string, { group: ThreadGroup; ticks: number }>();
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    intervalMs = 200,
    private readonly options: { threads?: boolean } = {},
  ) {
    this.sample();
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
      const rss = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      this.peakKb = Math.max(this.peakKb, hwm, rss);
      const ticks = cpuTicksOf(`/proc/${this.pid}/stat`).ticks;
      this.firstCpuTicks ??= ticks;
      this.lastCpuTicks = ticks;
      if (this.options.threads) this.sampleThreads();
    } catch {
      // The process has exited; the last sample stands.
    }
  }

  private sampleThreads(): void {
    // Threads there at the first sample count from it; later ones from their start.
    const first = this.threadLast.size === 0;
    for (const tid of readdirSync(`/proc/${this.pid}/task`)) {
      try {
        const { name, ticks } = cpuTicksOf(`/proc/${this.pid}/task/${tid}/stat`);
        if (first) this.threadFirst.set(tid, ticks);
        this.threadLast.set(tid, { group: threadGroup(tid === String(this.pid), name), ticks });
      } catch {
        // The thread has exited since the listing; its last sample stands.
      }
    }
  }

  /** CPU seconds (user and system) since sampling began. */
  cpuSeconds(): number {
    return (this.lastCpuTicks - (this.firstCpuTicks ?? this.lastCpuTicks)) / USER_HZ;
  }

  /**
   * With `threads`: cpuSeconds by kind of thread. A thread that exits between two samples loses
   * its last interval, so the sum may fall a little short of cpuSeconds.
   */
  cpuSecondsByThread(): Record<ThreadGroup, number> {
    const seconds: Record<ThreadGroup, number> = { main: 0, libvips: 0, temporal_core: 0, other_node: 0 };
    for (const [tid, { group, ticks }] of this.threadLast)
      seconds[group] += (ticks - (this.threadFirst.get(tid) ?? 0)) / USER_HZ;
    return seconds;
  }

  /** Stops sampling; the peak in MB. */
  stop(): number {
    this.sample();
    clearInterval(this.timer);
    return Math.round(this.peakKb / 1024);
  }
}
