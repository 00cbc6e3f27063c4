// The on-disk side of the local dev server: the record that lets the next invocation find the
// server this one started, the checks that a recorded pid is still that server, and stopping it.
// The server outlives the CLI on purpose (a SIGKILLed `pixelmill run` must be able to resume), so
// nothing here may rely on the server being our child.
import {
  closeSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  fstatSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface DevServerRecord {
  pid: number;
  address: string;
  uiUrl: string;
  port: number;
  uiPort: number;
  dbFile: string;
  logFile: string;
  namespace: string;
  startedAt: string;
}

export const recordPath = (stateDir: string): string => join(stateDir, 'temporal-server.json');
export const logPath = (stateDir: string): string => join(stateDir, 'temporal-server.log');
export const dbPath = (stateDir: string): string => join(stateDir, 'temporal.db');

export function readRecord(stateDir: string): DevServerRecord | undefined {
  let text: string;
  try {
    text = readFileSync(recordPath(stateDir), 'utf8');
  } catch {
    return undefined;
  }
  try {
    const record = JSON.parse(text) as Partial<DevServerRecord>;
    // A record we cannot trust is treated as absent: the port check still protects a live server.
    if (typeof record.pid !== 'number' || typeof record.address !== 'string') return undefined;
    return record as DevServerRecord;
  } catch {
    return undefined;
  }
}

export function writeRecord(stateDir: string, record: DevServerRecord): void {
  // Write then rename, so a concurrent reader never sees half a record.
  const temporary = `${recordPath(stateDir)}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(record, null, 2)}\n`);
  renameSync(temporary, recordPath(stateDir));
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Runs `start` while holding the state folder's start lock, so that two invocations starting at
 * once (two `pixelmill run` in one folder) start one server, not two on one port: the second
 * waits, then finds the first one's record. A lock whose holder died is taken over.
 */
export async function withStartLock<T>(
  stateDir: string,
  timeoutMs: number,
  start: () => Promise<T>,
): Promise<T> {
  const lock = join(stateDir, 'temporal-server.lock');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    let holder = '';
    try {
      holder = readFileSync(lock, 'utf8');
    } catch {
      continue; // released meanwhile
    }
    // An empty lock is one being written this very moment: its holder is alive.
    if (holder !== '' && !isAlive(Number(holder))) {
      rmSync(lock, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `${lock}: another pixelmill (pid ${holder}) has been starting the Temporal server too long`,
      );
    }
    await sleep(100);
  }
  try {
    return await start();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Removes the record only if it still names `pid`: another invocation may have replaced it. */
export function removeRecord(stateDir: string, pid: number): void {
  if (readRecord(stateDir)?.pid === pid) rmSync(recordPath(stateDir), { force: true });
}

/**
 * True when `pid` is alive and, where /proc exists, is a `start-dev` serving `dbFile`: pids are
 * reused, and we must neither reuse nor kill an unrelated process that inherited one.
 */
export function isDevServerProcess(pid: number, dbFile: string): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false; // ESRCH: gone; EPERM: another user's process, so not ours.
  }
  let stat: string;
  let cmdline: string[];
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return true; // No /proc (macOS): the gRPC probe that follows is the real check.
  }
  // A killed child stays a zombie until its parent reaps it; kill(pid, 0) still succeeds on it.
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  if (state === 'Z' || state === 'X') return false;
  return cmdline.includes('start-dev') && cmdline.includes(dbFile);
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    // The server was spawned detached, as the leader of its own process group.
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
}

/** SIGTERM, then SIGKILL once `graceMs` has passed; resolves when the process is gone. */
export async function terminateDevServer(pid: number, dbFile: string, graceMs = 10_000): Promise<void> {
  signalGroup(pid, 'SIGTERM');
  if (await exits(pid, dbFile, graceMs)) return;
  signalGroup(pid, 'SIGKILL');
  await exits(pid, dbFile, 5_000);
}

async function exits(pid: number, dbFile: string, withinMs: number): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  while (isDevServerProcess(pid, dbFile)) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/** Whether nothing listens on host:port (binding 127.0.0.1 also fails when 0.0.0.0 is taken). */
export function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/**
 * A port that was free a moment ago on 127.0.0.1, for a server that cannot take port 0 itself.
 *
 * It is drawn at random from below the kernel's ephemeral range, never from it: `temporal server
 * start-dev` binds its internal services to port 0, so a port the kernel handed out and we released
 * could be handed straight to another dev server starting in parallel before ours binds it.
 */
export async function freePort(): Promise<number> {
  const [low, high] = reservablePortRange();
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    if (await portIsFree(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error(`no free port found between ${low} and ${high}`);
}

// Ports this process already handed out: two callers must not get the same one before either binds.
const handedOut = new Set<number>();

function reservablePortRange(): [number, number] {
  let ephemeralStart = 32768;
  try {
    const [start] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
    if (Number(start) > 12_000) ephemeralStart = Number(start);
  } catch {
    // No /proc (macOS): its ephemeral range starts at 49152, so 32768 is already below it.
  }
  return [10_000, ephemeralStart];
}

/** The last lines of the server log, on one line, for an error message. */
export function logTail(logFile: string, lines = 4): string {
  let fd: number | undefined;
  try {
    fd = openSync(logFile, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, 8192);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const tail = buffer
      .toString('utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line.length > 0)
      .slice(-lines)
      .join(' | ');
    return tail.length > 600 ? `...${tail.slice(-600)}` : tail;
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
