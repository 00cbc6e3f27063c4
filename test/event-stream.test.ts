// A status stream followed to what it was followed for: the rest of the stream is read so that its
// connection serves the next request, and one that never ends is let go within the drain bound.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followEvents } from '../api/event-stream.js';
import type { RequestContext } from '../api/classify.js';

let server: Server;
let baseUrl: string;
let connections = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: {"status":"IN_QUEUE"}\n\n');
    res.write('data: {"status":"COMPLETED"}\n\n');
    // What a server may send after the final event, a moment later: a comment, then the end; or
    // nothing more.
    if (req.url !== '/open') setTimeout(() => res.end(': bye\n\n'), 50);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function follow(agent: Agent, path: string): Promise<string> {
  const url = new URL(path, baseUrl);
  const ctx: RequestContext = {
    endpoint: 'GET stream',
    target: `GET ${path}`,
    redact: (text: string) => text,
    now: () => Date.now(),
  };
  return followEvents(agent, ctx, {
    url,
    headers: {},
    onData: (data) =>
      (JSON.parse(data) as { status: string }).status === 'COMPLETED' ? 'completed' : undefined,
  });
}

describe('followEvents', () => {
  it("reads a stream's end so that its connection serves the next one", async () => {
    const agent = new Agent();
    connections = 0;
    for (const path of ['/a', '/b', '/c']) {
      expect(await follow(agent, path)).toBe('completed');
      // The connection goes back to the pool once its response has ended.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(connections).toBe(1);
    await agent.close();
  });

  // A drain without its bound never ends here: the test's own timeout fails it.
  it(
    'lets a stream that stays open after its final event go within the drain bound',
    { timeout: 10_000 },
    async () => {
      const agent = new Agent();
      expect(await follow(agent, '/open')).toBe('completed');
      // Its connection is closed, not handed to the next request.
      expect(await follow(agent, '/a')).toBe('completed');
      await agent.close();
    },
  );
});
