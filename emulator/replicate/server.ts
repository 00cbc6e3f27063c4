// The Replicate emulator's HTTP server: routing, and the checks every API request passes in a
// fixed order (route -> auth 401 -> rate limit 429 -> injected fault 5xx -> the route's own
// validation and action), then the error body of whichever check fails.
//
// Every API answer after authentication carries `ratelimit-remaining` and `ratelimit-reset`, as
// the API's recorded answers do; a 429 carries Retry-After when the config says so.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import {
  ADMIN_PREFIX,
  matchAdminRoute,
  readJsonBody,
  requestTarget,
  sendJson,
  type ImageCache,
} from '../core/index.js';
import type { AccountConfig, RequestClass } from './config.js';
import type { ReplicateContext, TokenEntry } from './context.js';
import type { LimitClass } from './limits.js';
import { throttledDetail } from './limits.js';
import { ADMIN_ROUTES, handleAdmin } from './routes/admin.js';
import { handleCreate } from './routes/create.js';
import { DELIVERY_PATH, DELIVERY_PATTERN, handleDelivery } from './routes/delivery.js';
import { handleCancel, handleGet, handleList, handleSecret } from './routes/predictions.js';
import type { CreateRoute } from './create-request.js';
import {
  methodNotAllowed,
  notFound,
  ReplicateApiError,
  serverError,
  unauthenticated,
  type ProblemJson,
} from './wire.js';

type ApiAction =
  | { kind: 'create'; route: CreateRoute }
  | { kind: 'list' }
  | { kind: 'get'; id: string }
  | { kind: 'cancel'; id: string }
  | { kind: 'secret' };

interface ApiRoute {
  method: string;
  pattern: string;
  requestClass: RequestClass;
  limitClass: LimitClass;
  action: ApiAction;
}

type Resolved =
  | { kind: 'api'; route: ApiRoute }
  | { kind: 'delivery'; rest: string }
  | { kind: 'admin'; name: string }
  | { kind: 'wrong_method'; pattern: string; allow: string }
  | { kind: 'unmatched' };

const decode = (segment: string): string => {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
};

/** The API routes a path matches, each with the one method it answers. */
function apiRoutesOf(path: string): ApiRoute[] {
  if (path === '/v1/predictions') {
    return [
      {
        method: 'POST',
        pattern: path,
        requestClass: 'create',
        limitClass: 'create',
        action: { kind: 'create', route: { kind: 'version' } },
      },
      { method: 'GET', pattern: path, requestClass: 'list', limitClass: 'other', action: { kind: 'list' } },
    ];
  }
  if (path === '/v1/webhooks/default/secret')
    return [
      {
        method: 'GET',
        pattern: path,
        requestClass: 'other',
        limitClass: 'other',
        action: { kind: 'secret' },
      },
    ];
  let match = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path);
  if (match) {
    const route: CreateRoute = { kind: 'model', owner: decode(match[1]!), name: decode(match[2]!) };
    const pattern = '/v1/models/{owner}/{name}/predictions';
    return [
      {
        method: 'POST',
        pattern,
        requestClass: 'create',
        limitClass: 'create',
        action: { kind: 'create', route },
      },
    ];
  }
  match = /^\/v1\/predictions\/([^/]+)\/cancel$/.exec(path);
  if (match) {
    const action: ApiAction = { kind: 'cancel', id: decode(match[1]!) };
    return [
      {
        method: 'POST',
        pattern: '/v1/predictions/{id}/cancel',
        requestClass: 'cancel',
        limitClass: 'other',
        action,
      },
    ];
  }
  match = /^\/v1\/predictions\/([^/]+)$/.exec(path);
  if (match) {
    const action: ApiAction = { kind: 'get', id: decode(match[1]!) };
    return [
      { method: 'GET', pattern: '/v1/predictions/{id}', requestClass: 'get', limitClass: 'other', action },
    ];
  }
  return [];
}

function resolve(method: string, path: string): Resolved {
  const routes = apiRoutesOf(path);
  if (routes.length > 0) {
    const route = routes.find((r) => r.method === method);
    if (route) return { kind: 'api', route };
    return {
      kind: 'wrong_method',
      pattern: routes[0]!.pattern,
      allow: routes.map((r) => r.method).join(', '),
    };
  }
  if (path.startsWith(DELIVERY_PATH)) {
    if (method === 'GET' || method === 'HEAD')
      return { kind: 'delivery', rest: path.slice(DELIVERY_PATH.length) };
    return { kind: 'wrong_method', pattern: DELIVERY_PATTERN, allow: 'GET, HEAD' };
  }
  return matchAdminRoute(method, path, ADMIN_ROUTES) ?? { kind: 'unmatched' };
}

/** Methods counted by name in stats; anything else counts as OTHER, keeping labels bounded. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** `Authorization: Bearer <token>` (or the older `Token <token>` scheme the docs once showed). */
function authenticate(ctx: ReplicateContext, req: IncomingMessage): TokenEntry {
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '') throw unauthenticated(false);
  const match = /^\s*(?:bearer|token)\s+(\S+)\s*$/i.exec(header);
  const entry = match?.[1] === undefined ? undefined : ctx.tokens.get(match[1]);
  if (!entry) throw unauthenticated(true);
  return entry;
}

export function createReplicateServer(ctx: ReplicateContext, webp: ImageCache): Server {
  const server = createServer((req, res) => {
    dispatch(req, res).catch((error: unknown) => {
      const detail = error instanceof Error ? error.stack : String(error);
      ctx.log(`replicate emulator: unexpected error on ${req.method} ${req.url}: ${detail}`);
      if (!res.headersSent) sendJson(res, 500, { detail: 'Internal server error', status: 500 });
      else res.destroy();
    });
  });

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, query } = requestTarget(req);
    const method = KNOWN_METHODS.has(req.method ?? '') ? req.method! : 'OTHER';
    const resolved = resolve(method, path);
    let label = `${method} (unmatched)`;
    try {
      switch (resolved.kind) {
        case 'api':
          label = `${method} ${resolved.route.pattern}`;
          await serveApi(req, res, resolved.route, query);
          break;
        case 'delivery':
          label = `${method} ${DELIVERY_PATTERN}`;
          await serveDelivery(req, res, resolved.rest);
          break;
        case 'admin':
          label = `${method} ${ADMIN_PREFIX}${resolved.name}`;
          await handleAdmin(ctx, req, res, method, resolved.name);
          break;
        case 'wrong_method':
          label = `${method} ${resolved.pattern}`;
          throw methodNotAllowed(req.method ?? method, resolved.allow);
        case 'unmatched':
          throw notFound();
      }
    } catch (error) {
      if (!(error instanceof ReplicateApiError)) throw error;
      sendError(res, error);
    }
    ctx.stats.request(...splitLabel(label), res.statusCode);
  }

  function sendError(res: ServerResponse, error: ReplicateApiError): void {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(error.headers)) res.setHeader(name, value);
    sendJson(res, error.status, error.body);
  }

  async function serveApi(
    req: IncomingMessage,
    res: ServerResponse,
    route: ApiRoute,
    query: URLSearchParams,
  ): Promise<void> {
    // The body is read first so that an early answer never leaves it to be parsed as a next request.
    const body = route.action.kind === 'create' ? await readJsonBody(req) : { kind: 'empty' as const };
    if (body.kind === 'too_large') res.setHeader('connection', 'close');
    const token = authenticate(ctx, req);
    const account = token.account;
    const now = ctx.clock.now();
    const lowCredit =
      ctx.limiter.limits.low_credit !== null &&
      route.limitClass === 'create' &&
      ctx.store.balance(account.username, now) < ctx.limiter.limits.low_credit.below_usd;
    const admission = ctx.limiter.take(token.index, route.limitClass, lowCredit, now);
    if (!admission.ok) throw throttled(admission);
    res.setHeader('ratelimit-remaining', String(admission.remaining));
    res.setHeader('ratelimit-reset', String(admission.resetSeconds));
    const fault = ctx.serverFaults.draw(route.requestClass);
    if (fault !== undefined) {
      ctx.stats.fault(`server_error_${route.requestClass}`);
      throw serverError(fault);
    }
    const answer = await act(req, res, route.action, account, query, body);
    if (answer === 'dropped') {
      // Counted with the status it would have had; the client never sees it.
      res.statusCode = 201;
      res.destroy();
      return;
    }
    for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
    if (!res.destroyed) sendJson(res, answer.status, answer.body);
  }

  function throttled(admission: { waitSeconds: number; lowCredit: boolean }): ReplicateApiError {
    const limits = ctx.limiter.limits;
    const body: ProblemJson = { detail: throttledDetail(limits, { ok: false, ...admission }) };
    if (limits.retry_after_in_body) body.retry_after = admission.waitSeconds;
    const headers: Record<string, string> = limits.retry_after_header
      ? { 'retry-after': String(admission.waitSeconds) }
      : {};
    return new ReplicateApiError(429, body, headers);
  }

  async function act(
    req: IncomingMessage,
    res: ServerResponse,
    action: ApiAction,
    account: AccountConfig,
    query: URLSearchParams,
    body: Awaited<ReturnType<typeof readJsonBody>>,
  ): Promise<{ status: number; body: unknown; headers?: Record<string, string> } | 'dropped'> {
    switch (action.kind) {
      case 'create': {
        const reply = await handleCreate(ctx, req, res, account, action.route, body);
        return reply.drop ? 'dropped' : reply;
      }
      case 'get':
        return { status: 200, body: handleGet(ctx, account, action.id) };
      case 'cancel':
        return { status: 200, body: handleCancel(ctx, account, action.id) };
      case 'list':
        return { status: 200, body: handleList(ctx, account, query) };
      case 'secret':
        return { status: 200, body: handleSecret(account) };
    }
  }

  async function serveDelivery(req: IncomingMessage, res: ServerResponse, rest: string): Promise<void> {
    const fault = ctx.serverFaults.draw('delivery');
    if (fault !== undefined) {
      ctx.stats.fault('server_error_delivery');
      throw serverError(fault);
    }
    await handleDelivery(ctx, webp, req, res, rest);
  }

  return server;
}

function splitLabel(label: string): [string, string] {
  const space = label.indexOf(' ');
  return [label.slice(0, space), label.slice(space + 1)];
}
