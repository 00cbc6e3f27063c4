// The BFL emulator's HTTP server: routing, then the checks each API request passes in a fixed
// order (route 404/405 -> injected 5xx -> x-key 403 -> body 422 -> active tasks 429 -> credits
// 402 -> accept), and the answer of whichever check fails. Every request is counted by route
// pattern and status.
//
// Routes: POST /v1/{model}, GET /v1/get_result, GET /v1/credits (the API); GET/HEAD
// /results/{id}/sample.{ext} (the delivery host, on the same port); /_emulator/* (admin).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { matchAdminRoute, requestTarget, sendJson } from '../core/index.js';
import type { BflContext, RequestClass } from './context.js';
import { BflApiError, methodNotAllowed, routeNotFound, SERVER_FAULTS, type ServerFault } from './errors.js';
import { isBflModel, type BflModel } from './models.js';
import { ADMIN_ROUTES, handleAdmin } from './routes/admin.js';
import { handleDelivery } from './routes/delivery.js';
import { handleGetResult } from './routes/get-result.js';
import { handleSubmit } from './routes/submit.js';
import { DELIVERY_PREFIX } from './sample-url.js';

const SUBMIT_PATTERN = '/v1/{model}';
const GET_RESULT_PATH = '/v1/get_result';
const CREDITS_PATH = '/v1/credits';
const DELIVERY_PATTERN = '/results/{id}/sample.{ext}';
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

type Resolved =
  | { kind: 'submit'; model: BflModel }
  | { kind: 'get_result' }
  | { kind: 'credits' }
  | { kind: 'delivery'; rest: string }
  | { kind: 'admin'; name: string }
  | { kind: 'wrong_method'; pattern: string; allow: string }
  | { kind: 'unmatched' };

function resolve(ctx: BflContext, method: string, path: string): Resolved {
  if (path === GET_RESULT_PATH)
    return method === 'GET' || method === 'HEAD'
      ? { kind: 'get_result' }
      : { kind: 'wrong_method', pattern: GET_RESULT_PATH, allow: 'GET' };
  if (path === CREDITS_PATH)
    return method === 'GET' || method === 'HEAD'
      ? { kind: 'credits' }
      : { kind: 'wrong_method', pattern: CREDITS_PATH, allow: 'GET' };
  if (path.startsWith('/v1/')) {
    const name = path.slice(4);
    if (isBflModel(name) && ctx.config.models[name].enabled)
      return method === 'POST'
        ? { kind: 'submit', model: name }
        : { kind: 'wrong_method', pattern: SUBMIT_PATTERN, allow: 'POST' };
  }
  if (path.startsWith(DELIVERY_PREFIX))
    return method === 'GET' || method === 'HEAD'
      ? { kind: 'delivery', rest: path.slice(DELIVERY_PREFIX.length) }
      : { kind: 'wrong_method', pattern: DELIVERY_PATTERN, allow: 'GET, HEAD' };
  return matchAdminRoute(method, path, ADMIN_ROUTES) ?? { kind: 'unmatched' };
}

function patternOf(resolved: Resolved, path: string): string {
  switch (resolved.kind) {
    case 'submit':
      return SUBMIT_PATTERN;
    case 'get_result':
      return GET_RESULT_PATH;
    case 'credits':
      return CREDITS_PATH;
    case 'delivery':
      return DELIVERY_PATTERN;
    case 'admin':
      return path;
    case 'wrong_method':
      return resolved.pattern;
    case 'unmatched':
      return '(unmatched)';
  }
}

function sendFault(res: ServerResponse, fault: ServerFault): void {
  res.writeHead(fault.status, {
    'content-type': fault.contentType,
    'content-length': Buffer.byteLength(fault.body),
  });
  res.end(fault.body);
}

export function createBflServer(ctx: BflContext, log: (line: string) => void): Server {
  const server = createServer((req, res) => {
    dispatch(req, res).catch((error: unknown) => {
      const detail = error instanceof Error ? error.stack : String(error);
      log(`bfl emulator: unexpected error on ${req.method} ${requestTarget(req).path}: ${detail}`);
      if (!res.headersSent) sendFault(res, SERVER_FAULTS[0]!);
      else res.destroy();
    });
  });

  /** The injected 5xx of `requestClass`, if the dice say so; counted as a fault. */
  function injectedFault(requestClass: RequestClass): ServerFault | undefined {
    const status = ctx.serverFaults.draw(requestClass);
    if (status === undefined) return undefined;
    ctx.stats.fault(`server_error_${requestClass}`);
    return SERVER_FAULTS.find((fault) => fault.status === status) ?? SERVER_FAULTS[0];
  }

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, query } = requestTarget(req);
    const method = KNOWN_METHODS.has(req.method ?? '') ? req.method! : 'OTHER';
    const resolved = resolve(ctx, method, path);
    const label = patternOf(resolved, path);
    try {
      await route(req, res, method, resolved, query);
    } catch (error) {
      if (!(error instanceof BflApiError)) throw error;
      sendJson(res, error.status, error.body, error.headers);
    }
    // Counted once the status is known (0: the connection was dropped without an answer).
    ctx.stats.request(method, label, res.headersSent ? res.statusCode : 0);
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    resolved: Resolved,
    query: URLSearchParams,
  ): Promise<void> {
    switch (resolved.kind) {
      case 'wrong_method':
        throw methodNotAllowed(resolved.allow);
      case 'unmatched':
        throw routeNotFound();
      case 'admin':
        return handleAdmin(ctx, req, res, method, resolved.name);
      case 'delivery': {
        const fault = injectedFault('delivery');
        if (fault) return sendFault(res, fault);
        return handleDelivery(ctx, req, res, resolved.rest, query);
      }
      case 'get_result': {
        const fault = injectedFault('get_result');
        if (fault) return sendFault(res, fault);
        if (ctx.config.auth.get_result_requires_key) {
          const auth = ctx.keys.authenticate(req.headers);
          if ('error' in auth) throw auth.error;
        }
        const { status, body } = handleGetResult(ctx, query, req.headers);
        return sendJson(res, status, body);
      }
      case 'credits': {
        const fault = injectedFault('credits');
        if (fault) return sendFault(res, fault);
        const auth = ctx.keys.authenticate(req.headers);
        if ('error' in auth) throw auth.error;
        return sendJson(res, 200, { credits: ctx.ledger.balance(auth.key.account, ctx.clock.now()) });
      }
      case 'submit': {
        const fault = injectedFault('submit');
        if (fault) return sendFault(res, fault);
        const auth = ctx.keys.authenticate(req.headers);
        if ('error' in auth) throw auth.error;
        const reply = await handleSubmit(ctx, req, resolved.model, auth.key);
        if ('tooLarge' in reply) {
          res.setHeader('connection', 'close');
          return sendJson(res, 413, { detail: 'Request Entity Too Large' });
        }
        const lostRate = ctx.config.faults.lost_submit_response_rate;
        if (lostRate > 0 && ctx.random.lostSubmit() < lostRate) {
          ctx.stats.fault('lost_submit_response');
          res.destroy();
          return;
        }
        return sendJson(res, reply.status, reply.body);
      }
    }
  }

  return server;
}
