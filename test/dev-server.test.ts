// The persistent local dev server: started detached on chosen ports, found again through its record,
// restarted on the same database after a SIGKILL with its workflows intact, and clear errors for a
// taken port or a server that cannot start. Real `temporal` binary, 127.0.0.1 only.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { UserError } from '../common/errors.js';
import { ensureDevServer, serverEnv, stopDevServer } from '../temporal/dev-server.js';
import { freePort } from '../temporal/dev-server-process.js';

const startedPids = new Set<number>();
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const pid of startedPids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  startedPids.clear();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempStateDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-devserver-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, '.pixelmill');
}

async function freePorts(count: number): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await freePort());
  return ports;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function waitUntilGone(pid: number): Promise<void> {
  for (let i = 0; i < 100 && isAlive(pid); i++) await sleep(100);
  expect(isAlive(pid)).toBe(false);
}

async function connect(address: string, namespace: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  cleanups.push(() => connection.close());
  return new Client({ connection, namespace });
}

describe('serverEnv', () => {
  it('runs Go on half the cores, at least one, unless GOMAXPROCS is set', () => {
    expect(serverEnv({ PATH: '/bin' }, 8)).toMatchObject({ PATH: '/bin', GOMAXPROCS: '4' });
    expect(serverEnv({}, 2).GOMAXPROCS).toBe('1');
    expect(serverEnv({}, 1).GOMAXPROCS).toBe('1');
    expect(serverEnv({ GOMAXPROCS: '6' }, 2).GOMAXPROCS).toBe('6');
    expect(serverEnv({}).TEMPORAL_VERSION_CHECK_DISABLED).toBe('1');
  });
});

describe('ensureDevServer', () => {
  it('starts a detached server, reuses it, and restarts it on the same database after a SIGKILL', async () => {
    const stateDir = tempStateDir();
    const [port, uiPort] = (await freePorts(2)) as [number, number];
    const lines: string[] = [];
    const first = await ensureDevServer({
      stateDir,
      port,
      uiPort,
      namespace: 'pixelmill-test',
      searchAttributes: [{ name: 'PixelmillRun', type: 'Keyword' }],
      log: (line) => lines.push(line),
    });
    startedPids.add(first.pid);
    expect(first).toMatchObject({
      address: `127.0.0.1:${port}`,
      namespace: 'pixelmill-test',
      startedHere: true,
    });
    expect(first.uiUrl).toBe(`http://localhost:${uiPort}`);
    expect((await fetch(first.uiUrl)).status).toBe(200);
    const record = JSON.parse(readFileSync(join(stateDir, 'temporal-server.json'), 'utf8')) as {
      pid: number;
    };
    expect(record.pid).toBe(first.pid);
    expect(existsSync(join(stateDir, 'temporal.db'))).toBe(true);
    // Go's threads capped for a machine it shares with its workers (serverEnv).
    const environ = readFileSync(`/proc/${first.pid}/environ`, 'utf8').split('\0');
    expect(environ).toContain(`GOMAXPROCS=${serverEnv(process.env).GOMAXPROCS}`);

    // Reused, and its set-up completed: a second search attribute, a second namespace.
    const second = await ensureDevServer({
      stateDir,
      port,
      uiPort,
      namespace: 'pixelmill-other',
      searchAttributes: [
        { name: 'PixelmillRun', type: 'Keyword' },
        { name: 'PixelmillShard', type: 'Int' },
      ],
      log: (line) => lines.push(line),
    });
    expect(second).toMatchObject({ startedHere: false, pid: first.pid, address: first.address });
    expect(lines.some((line) => line.includes('reusing'))).toBe(true);
    const other = await connect(second.address, 'pixelmill-other');
    const { customAttributes } = await other.connection.operatorService.listSearchAttributes({
      namespace: 'pixelmill-other',
    });
    // IndexedValueType: 2 Keyword, 3 Int.
    expect(customAttributes).toMatchObject({ PixelmillRun: 2, PixelmillShard: 3 });
    await other.workflow.start('notRegisteredAnywhere', {
      taskQueue: 'nobody-polls',
      workflowId: 'in-other-ns',
    });

    const client = await connect(first.address, 'pixelmill-test');
    await client.workflow.start('notRegisteredAnywhere', {
      taskQueue: 'nobody-polls',
      workflowId: 'survivor',
    });
    await second.stop(); // Not started by that call: must leave the server running.
    expect(isAlive(first.pid)).toBe(true);

    process.kill(first.pid, 'SIGKILL');
    await waitUntilGone(first.pid);
    const third = await ensureDevServer({ stateDir, port, uiPort, namespace: 'pixelmill-test' });
    startedPids.add(third.pid);
    expect(third.startedHere).toBe(true);
    expect(third.pid).not.toBe(first.pid);
    const after = await connect(third.address, 'pixelmill-test');
    const described = await after.workflow.getHandle('survivor').describe();
    expect(described.status.name).toBe('RUNNING');
    expect(described.type).toBe('notRegisteredAnywhere');

    expect(await stopDevServer(stateDir)).toBe(true);
    await waitUntilGone(third.pid);
    expect(existsSync(join(stateDir, 'temporal-server.json'))).toBe(false);
    expect(await stopDevServer(stateDir)).toBe(false);
    await third.stop(); // Already stopped: a no-op, not an error.
  });

  it('refuses a port held by another program, naming the port and how to choose another', async () => {
    const sockets = new Set<Socket>();
    const squatter = createServer((socket) => {
      sockets.add(socket);
      socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
    });
    const taken = await new Promise<number>((resolve) =>
      squatter.listen(0, '127.0.0.1', () => resolve((squatter.address() as { port: number }).port)),
    );
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          squatter.close(() => resolve());
        }),
    );
    const [free] = (await freePorts(1)) as [number];
    const stateDir = tempStateDir();

    const grpc = ensureDevServer({ stateDir, port: taken, uiPort: free });
    await expect(grpc).rejects.toBeInstanceOf(UserError);
    await expect(grpc).rejects.toThrow(new RegExp(`port ${taken} .*PIXELMILL_TEMPORAL_PORT=<port>`));

    const ui = ensureDevServer({ stateDir, port: free, uiPort: taken });
    await expect(ui).rejects.toThrow(
      new RegExp(`port ${taken} \\(Temporal Web UI\\).*PIXELMILL_TEMPORAL_UI_PORT`),
    );
    expect(existsSync(join(stateDir, 'temporal-server.json'))).toBe(false);
  });

  it('reports the last lines of the log when the server exits during start-up', async () => {
    const stateDir = tempStateDir();
    const binDir = mkdtempSync(join(tmpdir(), 'pixelmill-fakebin-'));
    cleanups.push(() => rmSync(binDir, { recursive: true, force: true }));
    const fake = join(binDir, 'temporal');
    const argsFile = join(binDir, 'args');
    writeFileSync(
      fake,
      `#!/bin/sh\necho "$@" > '${argsFile}'\necho "fatal: pretend start failure" >&2\nexit 3\n`,
    );
    chmodSync(fake, 0o755);
    const saved = process.env.TEMPORAL_CLI_PATH;
    process.env.TEMPORAL_CLI_PATH = fake;
    cleanups.push(() => {
      if (saved === undefined) delete process.env.TEMPORAL_CLI_PATH;
      else process.env.TEMPORAL_CLI_PATH = saved;
    });
    const [port, uiPort] = (await freePorts(2)) as [number, number];

    const start = ensureDevServer({
      stateDir,
      port,
      uiPort,
      searchAttributes: [{ name: 'PixelmillRun', type: 'Keyword' }],
    });
    await expect(start).rejects.toThrow(
      /exited during start-up \(exit code 3\).*fatal: pretend start failure/,
    );
    expect(existsSync(join(stateDir, 'temporal-server.json'))).toBe(false);
    const args = readFileSync(argsFile, 'utf8');
    expect(args).toContain(`server start-dev --ip 127.0.0.1 --port ${port} --ui-port ${uiPort}`);
    expect(args).toContain(`--db-filename ${join(stateDir, 'temporal.db')}`);
    // One task-queue partition, so that the server-side rate limit dispatches evenly.
    expect(args).toContain('matching.numTaskqueueReadPartitions=1');
    expect(args).toContain('matching.numTaskqueueWritePartitions=1');
    expect(args).toContain('--search-attribute PixelmillRun=Keyword');
  });
});
