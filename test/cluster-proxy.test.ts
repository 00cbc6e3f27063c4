// The proxy through which the cluster chaos run cuts a worker off from the frontend
// (bench/chaos-proxy.ts): while cut, nothing crosses it either way, not even a new connection or a
// close; healed, everything held arrives, in order. "Nothing crosses" is observed over 300 ms of
// loopback, where a forwarded byte takes well under a millisecond.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { PartitionProxy } from '../bench/chaos-proxy.js';

const QUIET_MS = 300;

interface Upstream {
  server: Server;
  address: string;
  /** Every event the server saw, in order, with whether the link was healed by then. */
  events: string[];
  sockets: Socket[];
}

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function upstream(state: { healed: boolean }): Promise<Upstream> {
  const events: string[] = [];
  const sockets: Socket[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    events.push(`connection${state.healed ? ' after heal' : ''}`);
    socket.on('data', (chunk: Buffer) =>
      events.push(`data ${chunk.toString()}${state.healed ? ' after heal' : ''}`),
    );
    socket.on('end', () => events.push(`end${state.healed ? ' after heal' : ''}`));
    socket.on('error', () => undefined);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as { port: number };
  return { server, address: `127.0.0.1:${port}`, events, sockets };
}

async function proxyTo(address: string): Promise<PartitionProxy> {
  const proxy = await PartitionProxy.start(address);
  cleanups.push(() => proxy.close());
  return proxy;
}

async function client(proxy: PartitionProxy): Promise<{ socket: Socket; received: string[] }> {
  const [host, port] = proxy.address.split(':');
  const socket = connect(Number(port), host!);
  const received: string[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk.toString()));
  socket.on('error', () => undefined);
  cleanups.push(() => void socket.destroy());
  await once(socket, 'connect');
  return { socket, received };
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await sleep(5);
}

describe('the partition proxy', () => {
  it('forwards both ways; cut, holds every byte both ways until healed, then delivers them in order', async () => {
    const state = { healed: false };
    const server = await upstream(state);
    const proxy = await proxyTo(server.address);
    const { socket, received } = await client(proxy);
    socket.write('a');
    await until(() => server.events.includes('data a'));
    server.sockets[0]!.write('x');
    await until(() => received.join('') === 'x');

    proxy.cut();
    expect(proxy.counts.openAtCut).toBe(1);
    socket.write('b');
    server.sockets[0]!.write('y');
    await sleep(QUIET_MS);
    expect(server.events).toEqual(['connection', 'data a']);
    expect(received.join('')).toBe('x');

    state.healed = true;
    proxy.heal();
    await until(() => received.join('') === 'xy');
    await until(() => server.events.length === 3);
    expect(server.events).toEqual(['connection', 'data a', 'data b after heal']);
  });

  it('a connection made while cut reaches the server only once healed, with what it sent meanwhile', async () => {
    const state = { healed: false };
    const server = await upstream(state);
    const proxy = await proxyTo(server.address);
    proxy.cut();
    const { socket } = await client(proxy);
    socket.write('hello');
    await sleep(QUIET_MS);
    expect(server.events).toEqual([]);
    expect(proxy.counts.acceptedWhileCut).toBe(1);

    state.healed = true;
    proxy.heal();
    await until(() => server.events.length === 2);
    expect(server.events).toEqual(['connection after heal', 'data hello after heal']);
  });

  it("a side's close while cut reaches the other only once healed", async () => {
    const state = { healed: false };
    const server = await upstream(state);
    const proxy = await proxyTo(server.address);
    const { socket } = await client(proxy);
    await until(() => server.events.length === 1);

    proxy.cut();
    socket.destroy();
    await sleep(QUIET_MS);
    expect(server.events).toEqual(['connection']);

    state.healed = true;
    proxy.heal();
    await until(() => server.events.length === 2);
    expect(server.events).toEqual(['connection', 'end after heal']);
  });
});
