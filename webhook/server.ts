// The webhook receiver: a provider's webhook (`POST {webhook}/callback`) in, a `taskFinished`
// signal to the shard named by the path out. The provider's verifier (providers/*/webhook.ts)
// checks the signature its own way and reads the body. It answers 2xx only once Temporal has accepted the signal, so
// anything that goes wrong on the way (Temporal down, the receiver stopping) leaves the service to
// retry, and the shard's slow polling catches what is never delivered.
//
// Answers: 401 missing or wrong signature, 413 body over the limit, 404 not a shard's callback
// path, 400 signed but not a webhook of the provider (retrying cannot help), 503 the signal failed (retry), 200
// otherwise, including duplicates and tasks whose shard is gone (see `handle`). The secret and the
// signature header are never logged.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProviderName, WebhookVerifier } from '../providers/types.js';
import { readBody } from '../common/http-body.js';
import { UserError, errorMessage } from '../common/errors.js';
import { SeenTasks } from './dedupe.js';
import { webhookTarget } from './route.js';
import { taskFinishedFrom, type ShardSignaller, type SignalOutcome } from './signal.js';

/** A Task body is a few hundred bytes plus its result URLs; anything near this is not one. */
export const DEFAULT_MAX_BODY_BYTES = 256 * 1024;
/** Tasks remembered for de-duplication; the service's retries span under two minutes. */
const SEEN_CAPACITY = 100_000;
const SEEN_TTL_MS = 60 * 60_000;
/** Gone workflows reported in the log once each, up to this many. */
const GONE_LOG_LIMIT = 1_000;

export interface WebhookServerOptions {
  signal: ShardSignaller;
  /**
   * Each provider's signature check, with its keys (from the environment, never from a file the
   * run records); undefined for a provider this receiver has no keys for (its webhooks get 404).
   */
  verifierFor: (provider: ProviderName) => WebhookVerifier | undefined;
  /** The receiver's clock, for signature timestamps (tests move it). */
  now?: () => number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  port?: number;
  maxBodyBytes?: number;
  log?: (line: string) => void;
}

export interface WebhookCounts {
  signalled: number;
  duplicate: number;
  /** Authentic deliveries with nothing to signal: the shard is gone, or the state is not terminal. */
  ignored: number;
  unauthorized: number;
  too_large: number;
  bad_request: number;
  not_found: number;
  /** The signal failed; the service was asked to retry. */
  failed: number;
}

export interface RunningWebhookServer {
  /** `http://<host>:<port>`, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly counts: Readonly<WebhookCounts>;
  /** Stops accepting, lets deliveries in flight finish, then drops idle connections. */
  close(): Promise<void>;
}

export class WebhookServerError extends UserError {
  override name = 'WebhookServerError';
}

type Answer = { status: number; outcome: keyof WebhookCounts };

export async function startWebhookServer(options: WebhookServerOptions): Promise<RunningWebhookServer> {
  const { verifierFor, signal } = options;
  const now = options.now ?? Date.now;
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const log = options.log ?? ((line: string) => void process.stderr.write(`${line}\n`));
  const counts: WebhookCounts = {
    signalled: 0,
    duplicate: 0,
    ignored: 0,
    unauthorized: 0,
    too_large: 0,
    bad_request: 0,
    not_found: 0,
    failed: 0,
  };
  const seen = new SeenTasks({ capacity: SEEN_CAPACITY, ttlMs: SEEN_TTL_MS });
  /** Signals under way by task id: a delivery repeated meanwhile waits for the first one's outcome. */
  const signalling = new Map<string, Promise<SignalOutcome>>();
  const goneLogged = new Set<string>();
  const handlers = new Set<Promise<void>>();

  async function handle(req: IncomingMessage): Promise<Answer> {
    if (req.method !== 'POST') return { status: 405, outcome: 'not_found' };
    const target = webhookTarget(new URL(req.url ?? '/', 'http://receiver').pathname);
    const verifier = target && verifierFor(target.provider);
    if (target === undefined || verifier === undefined) return { status: 404, outcome: 'not_found' };
    const { workflowId } = target;
    const body = await readBody(req, maxBodyBytes);
    if (body === undefined) return { status: 413, outcome: 'too_large' };
    // Cut off by the sender: not a bad signature, and nobody is left to answer.
    if (!req.complete) return { status: 400, outcome: 'bad_request' };
    const headers: Record<string, string | undefined> = {};
    for (const [name, value] of Object.entries(req.headers))
      headers[name] = Array.isArray(value) ? value[0] : value;
    const verdict = await verifier.verify({ body, headers, nowMs: now() });
    if (!verdict.ok)
      return { status: verdict.status, outcome: verdict.status === 401 ? 'unauthorized' : 'bad_request' };
    const task = taskFinishedFrom(verdict.notice);
    if (task === undefined) return { status: 200, outcome: 'ignored' };
    if (seen.has(task.taskId)) return { status: 200, outcome: 'duplicate' };

    let pending = signalling.get(task.taskId);
    const first = pending === undefined;
    if (pending === undefined) {
      pending = signal(workflowId, task).finally(() => signalling.delete(task.taskId));
      signalling.set(task.taskId, pending);
    }
    let outcome: SignalOutcome;
    try {
      outcome = await pending;
    } catch (error) {
      if (first)
        log(
          `pixelmill webhook: signalling ${workflowId} failed (the service will retry): ${errorMessage(error)}`,
        );
      return { status: 503, outcome: 'failed' };
    }
    if (!first) return { status: 200, outcome: 'duplicate' };
    seen.add(task.taskId);
    if (outcome === 'signalled') return { status: 200, outcome: 'signalled' };
    // The shard has closed (it ends only once every item is final) or never existed: nothing is
    // waiting for this task. 2xx completes the delivery; a 4xx would stop the retries too, but it
    // reads as a failure in the service's delivery log for what is a normal late arrival.
    if (goneLogged.size < GONE_LOG_LIMIT && !goneLogged.has(workflowId)) {
      goneLogged.add(workflowId);
      log(`pixelmill webhook: ${workflowId} is not running; its webhooks are acknowledged and dropped`);
    }
    return { status: 200, outcome: 'ignored' };
  }

  const server = createServer((req, res) => {
    const work = handle(req)
      .then((answer) => respond(res, answer, counts))
      .catch((error: unknown) => {
        log(`pixelmill webhook: unexpected error: ${errorMessage(error)}`);
        respond(res, { status: 500, outcome: 'failed' }, counts);
      })
      .finally(() => handlers.delete(work));
    handlers.add(work);
  });
  // Slow or stalled senders must not hold connections: the service's own attempt timeout is 10 s.
  server.headersTimeout = 15_000;
  server.requestTimeout = 30_000;

  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new WebhookServerError(
          'webhook_listen_failed',
          `the webhook receiver cannot listen on ${options.host ?? '127.0.0.1'}:${options.port ?? 0}: ${error.code ?? error.message}`,
        ),
      ),
    );
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    counts,
    close() {
      closing ??= (async () => {
        const closed = new Promise((resolve) => server.close(resolve));
        server.closeIdleConnections();
        await Promise.allSettled([...handlers]);
        server.closeAllConnections();
        await closed;
      })();
      return closing;
    },
  };
}

function respond(res: ServerResponse, answer: Answer, counts: WebhookCounts): void {
  counts[answer.outcome]++;
  if (res.headersSent || res.destroyed) return;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  // An oversize body is not read to its end; the connection cannot be reused after it.
  if (answer.status === 413) headers.connection = 'close';
  if (answer.status === 405) headers.allow = 'POST';
  res.writeHead(answer.status, headers).end(JSON.stringify({ outcome: answer.outcome }));
}
