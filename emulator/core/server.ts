// Server lifecycle shared by the provider emulators: listen on host:port (port 0 = a free port),
// the base URL clients use, and an idempotent close() that drops keep-alive connections and runs
// the emulator's own shutdown steps (webhook timers, open streams) once.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { UserError } from '../../common/errors.js';

export type ProviderName = 'fal' | 'replicate' | 'bfl';

/** What every `start<Provider>Emulator` resolves to. */
export interface RunningProviderEmulator<Config = unknown, Stats extends object = object> {
  readonly provider: ProviderName;
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:8788`. */
  readonly url: string;
  /** The config it started with (after defaults and validation). */
  readonly config: Config;
  /** What /_emulator/stats answers. */
  stats(): Stats;
  /** Stops listening, drops open connections, cancels timers and pending webhooks. Idempotent. */
  close(): Promise<void>;
}

export class ProviderEmulatorListenError extends UserError {
  override name = 'ProviderEmulatorListenError';
}

/** The host as it goes into a URL: wildcard addresses become loopback, IPv6 gets brackets. */
export function urlHost(host: string): string {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * Listens and resolves with the base URL. A failure is a ProviderEmulatorListenError, or what
 * `failure(reason)` makes (the first API's emulator keeps its own error class and words).
 */
export async function listen(
  server: Server,
  host: string,
  port: number,
  provider: string,
  failure: (reason: string) => Error = (reason) =>
    new ProviderEmulatorListenError(
      'emulator_listen_failed',
      `${provider} emulator cannot listen on ${host}:${port}: ${reason}`,
    ),
): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const reason =
        error.code === 'EADDRINUSE' ? 'the address is already in use' : (error.code ?? error.message);
      reject(failure(reason));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  const { port: actual } = server.address() as AddressInfo;
  return `http://${urlHost(host)}:${actual}`;
}

/**
 * close() for a listening server: stops accepting, drops every connection (keep-alive ones would
 * hold it open until they time out), then runs `shutdown` steps; the same promise on every call.
 */
export function closerFor(server: Server, ...shutdown: (() => Promise<void> | void)[]): () => Promise<void> {
  let closing: Promise<void> | undefined;
  const close = async (): Promise<void> => {
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await Promise.all([stopped, ...shutdown.map(async (step) => step())]);
  };
  return () => (closing ??= close());
}
