// A loopback HTTP server for tests that play the other side of a call (a provider's API, a webhook
// receiver): 127.0.0.1 on port 0, each request's body read whole before the handler sees it, and a
// close() that drops keep-alive connections first. The caller registers close() at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Answers a request once its whole body has arrived; it may also leave it unanswered. */
export type BodyHandler = (req: IncomingMessage, res: ServerResponse, body: Buffer) => void;

export interface LoopbackServer {
  server: Server;
  /** `http://127.0.0.1:<port>` */
  origin: string;
  close(): Promise<void>;
}

export async function startLoopbackServer(handle: BodyHandler): Promise<LoopbackServer> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => handle(req, res, Buffer.concat(chunks)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async (): Promise<void> => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close };
}
