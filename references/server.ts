// The reference server of an embedded run with a local output: serves the references the CLI
// copied into `<output>/.pixelmill/references/` over HTTP, for the provider to fetch. It listens
// on loopback (enough for the built-in emulator, and for a tunnel on PIXELMILL_REFERENCE_PORT);
// a real provider needs a public address: an s3:// output, or PIXELMILL_PUBLIC_URL.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { UserError } from '../common/errors.js';
import { REFERENCES_DIR } from './reference-uri.js';

const CONTENT_TYPES: Record<string, string> = {
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
  gif: 'image/gif',
};

/** `/<folder token>/<sha256>.<ext>`: nothing else is served. */
const REFERENCE_PATH = /^\/([0-9a-f]{16})\/([0-9a-f]{64}\.(png|jpg|webp|gif))$/;

export class ReferenceServer {
  private constructor(
    readonly server: Server,
    readonly baseUrl: string,
    /** Folders served, by token: the state folders of the runs that asked for a URL. */
    private readonly folders: Map<string, string>,
  ) {}

  static async start(options: { port?: number } = {}): Promise<ReferenceServer> {
    const folders = new Map<string, string>();
    const server = createServer((req, res) => {
      const match = REFERENCE_PATH.exec(req.url ?? '');
      const folder = match && folders.get(match[1] ?? '');
      if (!match || !folder || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404).end();
        return;
      }
      const file = join(folder, match[2] ?? '');
      stat(file).then(
        (info) => {
          res.writeHead(200, {
            'content-type': CONTENT_TYPES[match[3] ?? ''] ?? 'application/octet-stream',
            'content-length': info.size,
          });
          if (req.method === 'HEAD') res.end();
          else
            createReadStream(file)
              .on('error', () => res.destroy())
              .pipe(res);
        },
        () => res.writeHead(404).end(),
      );
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const { port } = server.address() as AddressInfo;
    return new ReferenceServer(server, `http://127.0.0.1:${port}`, folders);
  }

  /** The URL of reference `file` of the run whose state folder is `stateDir`. */
  urlFor(stateDir: string, file: string): string {
    const token = createHash('sha256').update(stateDir).digest('hex').slice(0, 16);
    this.folders.set(token, join(stateDir, REFERENCES_DIR));
    return `${this.baseUrl}/${token}/${file}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

export const REFERENCE_PORT_ENV = 'PIXELMILL_REFERENCE_PORT';

/** The reference server's port from the environment (for a tunnel to it); default a free one. */
export function referencePort(env: NodeJS.ProcessEnv): { port?: number } {
  const value = env[REFERENCE_PORT_ENV];
  if (!value) return {};
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    throw new UserError('config_invalid', `${REFERENCE_PORT_ENV}=${value} is not a port number (1-65535)`);
  return { port };
}
