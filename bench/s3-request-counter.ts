// A pass-through proxy in front of an S3-compatible server that counts the requests by kind, for
// the benchmark's "object-store requests per image". It forwards every request as it came (the
// SigV4 signature covers the Host header, so the client is pointed at the proxy and signs for it;
// the proxy rewrites nothing but the connection).
import { createServer, request as forward, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

export type S3RequestKind = 'get' | 'head' | 'put' | 'list' | 'delete' | 'other';

export interface S3RequestCounter {
  /** The proxy's URL: give it to the client as the endpoint. */
  url: string;
  counts(): Record<S3RequestKind, number>;
  stop(): Promise<void>;
}

function kindOf(request: IncomingMessage): S3RequestKind {
  const url = new URL(request.url ?? '/', 'http://proxy');
  // Path style: /bucket or /bucket/ is the bucket itself (a listing on GET).
  const isBucket = url.pathname.split('/').filter(Boolean).length <= 1;
  switch (request.method) {
    case 'GET':
      return isBucket || url.searchParams.has('list-type') ? 'list' : 'get';
    case 'HEAD':
      return 'head';
    case 'PUT':
      return 'put';
    case 'DELETE':
      return 'delete';
    default:
      return 'other';
  }
}

export async function startS3RequestCounter(target: string): Promise<S3RequestCounter> {
  const upstream = new URL(target);
  const counts: Record<S3RequestKind, number> = { get: 0, head: 0, put: 0, list: 0, delete: 0, other: 0 };
  const server = createServer((incoming, outgoing) => {
    counts[kindOf(incoming)]++;
    const proxied = forward(
      {
        hostname: upstream.hostname,
        port: upstream.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    proxied.on('error', () => outgoing.destroy());
    incoming.pipe(proxied);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
