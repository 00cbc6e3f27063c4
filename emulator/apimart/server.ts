// The emulator's HTTP server: routing, and the checks every API request passes in a fixed order
// (route -> auth 401 -> rate limit 429 -> injected fault 5xx -> validation 400 -> credits 402 ->
// act), then the error envelope for whichever check fails. A query's successful answer may then
// be garbled (faults.malformed_response_rate, malformed.ts).
//
// Plain node:http, keep-alive on. The API hot path (route match, key lookup, token bucket, Map
// lookup) allocates little beyond the response itself.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Language } from './wire.js';
import { parseBody, type ParsedBody } from './body.js';
import type { ApiCall, ApiReply, EmulatorContext } from './context.js';
import {
  EmulatorApiError,
  errorEnvelope,
  errorStatus,
  SERVER_FAULT_CODES,
  type ApiErrorCode,
} from './errors.js';
import { readBody } from '../../common/http-body.js';
import { ADMIN_PREFIX, matchAdminRoute } from '../core/admin-routes.js';
import { MAX_BODY_BYTES, sendJson, sendJsonText } from '../core/http.js';
import { parseLanguage } from './i18n.js';
import { MALFORMED_KINDS, malformedBody, type MalformedKind } from './malformed.js';
import type { RateClass } from './rate-limit.js';
import { ADMIN_ROUTES, handleAdmin } from './routes/admin.js';
import { handleResult, RESULTS_PREFIX } from './routes/results.js';
import { handleSubmit, submitLanguage } from './routes/submit.js';
import { handleBatch, handleGetTask } from './routes/tasks.js';

interface ApiRoute {
  readonly method: string;
  readonly pattern: string;
  readonly rateClass: RateClass;
  readonly readsBody: boolean;
  readonly handle: (ctx: EmulatorContext, call: ApiCall) => ApiReply | Promise<ApiReply>;
}

const SUBMIT: ApiRoute = {
  method: 'POST',
  pattern: '/v1/images/generations',
  rateClass: 'submit',
  readsBody: true,
  handle: handleSubmit,
};
const GET_TASK: ApiRoute = {
  method: 'GET',
  pattern: '/v1/tasks/{id}',
  rateClass: 'query',
  readsBody: false,
  handle: handleGetTask,
};
const BATCH: ApiRoute = {
  method: 'POST',
  pattern: '/v1/tasks/batch',
  rateClass: 'query',
  readsBody: true,
  handle: handleBatch,
};
const TASKS_PREFIX = '/v1/tasks/';
const RESULT_PATTERN = '/results/{task_id}/{index}.png';

/** Methods counted by name in stats; anything else is counted as OTHER, keeping labels bounded. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

type Resolved =
  | { kind: 'api'; route: ApiRoute; param: string }
  | { kind: 'result'; rest: string }
  | { kind: 'admin'; name: string }
  | { kind: 'wrong_method'; pattern: string; allow: string }
  | { kind: 'unmatched' };

function resolve(method: string, path: string): Resolved {
  if (path === SUBMIT.pattern)
    return method === 'POST' ? { kind: 'api', route: SUBMIT, param: '' } : wrong(SUBMIT);
  if (path === BATCH.pattern)
    return method === 'POST' ? { kind: 'api', route: BATCH, param: '' } : wrong(BATCH);
  if (
    path.startsWith(TASKS_PREFIX) &&
    path.indexOf('/', TASKS_PREFIX.length) < 0 &&
    path.length > TASKS_PREFIX.length
  ) {
    return method === 'GET'
      ? { kind: 'api', route: GET_TASK, param: safeDecode(path.slice(TASKS_PREFIX.length)) }
      : wrong(GET_TASK);
  }
  if (path.startsWith(RESULTS_PREFIX)) {
    if (method === 'GET' || method === 'HEAD')
      return { kind: 'result', rest: path.slice(RESULTS_PREFIX.length) };
    return { kind: 'wrong_method', pattern: RESULT_PATTERN, allow: 'GET, HEAD' };
  }
  return matchAdminRoute(method, path, ADMIN_ROUTES) ?? { kind: 'unmatched' };
}

function wrong(route: ApiRoute): Resolved {
  return { kind: 'wrong_method', pattern: route.pattern, allow: route.method };
}

/** A server must accept the absolute form `http://host/path` too (RFC 9112 3.2.2); route on its path. */
function originForm(target: string): string {
  if (target.startsWith('/') || !/^https?:\/\//i.test(target)) return target;
  try {
    const url = new URL(target);
    return `${url.pathname}${url.search}`;
  } catch {
    return target;
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** What is known about one request for its error language and its stats line. */
interface Exchange {
  language: Language;
  label: number;
  keyIndex: number;
  tMs: number;
}

export function createEmulatorServer(ctx: EmulatorContext, log: (line: string) => void): Server {
  const { stats, clock } = ctx;
  const server = createServer((req, res) => {
    dispatch(req, res).catch((error: unknown) => {
      const detail = error instanceof Error ? error.stack : String(error);
      log(`emulator: unexpected error on ${req.method} ${req.url}: ${detail}`);
      if (!res.headersSent) sendJson(res, 500, errorEnvelope('internal_error', 'en'));
      else res.destroy();
    });
  });

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = originForm(req.url ?? '/');
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    const rawMethod = req.method ?? 'GET';
    const method = KNOWN_METHODS.has(rawMethod) ? rawMethod : 'OTHER';
    const resolved = resolve(method, path);
    const exchange: Exchange = {
      language: parseLanguage(query.get('language')) ?? 'en',
      label: -1,
      keyIndex: -1,
      tMs: clock.now(),
    };
    try {
      switch (resolved.kind) {
        case 'api':
          exchange.label = stats.labelId(resolved.route.method, resolved.route.pattern);
          await serveApi(req, res, resolved.route, resolved.param, query, exchange);
          break;
        case 'result':
          exchange.label = stats.labelId(method, RESULT_PATTERN);
          await handleResult(ctx, req, res, resolved.rest);
          break;
        case 'admin':
          exchange.label = stats.labelId(method, `${ADMIN_PREFIX}${resolved.name}`);
          await handleAdmin(ctx, req, res, method, resolved.name, query);
          break;
        case 'wrong_method':
          exchange.label = stats.labelId(method, resolved.pattern);
          throw new EmulatorApiError(
            'method_not_allowed',
            { method: rawMethod, allowed: resolved.allow },
            { allow: resolved.allow },
          );
        case 'unmatched':
          exchange.label = stats.labelId(method, '(unmatched)');
          throw new EmulatorApiError('route_not_found');
      }
    } catch (error) {
      if (!(error instanceof EmulatorApiError)) throw error;
      const { code, vars, headers } = error;
      sendJson(res, errorStatus(code), errorEnvelope(code, exchange.language, vars), headers);
    }
    stats.record(exchange.label, res.statusCode, exchange.keyIndex, exchange.tMs);
  }

  /** The checks in order (see the header), then the route's own validation and action. */
  async function serveApi(
    req: IncomingMessage,
    res: ServerResponse,
    route: ApiRoute,
    pathParam: string,
    query: URLSearchParams,
    exchange: Exchange,
  ): Promise<void> {
    const body: ParsedBody = route.readsBody
      ? parseBody(await readBody(req, MAX_BODY_BYTES))
      : { kind: 'none' };
    if (body.kind === 'too_large') res.setHeader('connection', 'close');
    exchange.tMs = clock.now();
    const bodyLanguage = route === SUBMIT ? submitLanguage(body) : undefined;
    if (bodyLanguage) exchange.language = bodyLanguage;

    const auth = ctx.keys.authenticate(req.headers);
    if (!auth.ok) throw new EmulatorApiError(auth.code);
    exchange.keyIndex = auth.key.index;

    const wait = ctx.limiter.take(auth.key.index, route.rateClass);
    if (wait > 0) {
      throw new EmulatorApiError(
        'rate_limit_exceeded',
        { retry_after: wait },
        { 'retry-after': String(wait) },
      );
    }
    const faultRate = ctx.config.faults.server_error_rate;
    if (faultRate > 0 && ctx.faultRandom() < faultRate) {
      ctx.stats.recordFault('server_error');
      throw new EmulatorApiError(drawFault());
    }

    const languageGiven = route === SUBMIT ? bodyLanguage !== undefined : query.has('language');
    const idempotencyKey = req.headers['idempotency-key'];
    const call = {
      key: auth.key,
      language: exchange.language,
      languageGiven,
      pathParam,
      body,
      idempotencyKey: Array.isArray(idempotencyKey) ? idempotencyKey.join(', ') : idempotencyKey,
    };
    const result = await route.handle(ctx, call);
    if (route === SUBMIT && drawLostSubmitResponse()) {
      ctx.stats.recordFault('lost_submit_response');
      res.destroy();
      return;
    }
    const malformed = route === SUBMIT ? undefined : drawMalformed();
    if (malformed) {
      ctx.stats.recordFault(malformed);
      sendJsonText(res, result.status, malformedBody(result.body, malformed));
    } else {
      sendJson(res, result.status, result.body);
    }
  }

  function drawLostSubmitResponse(): boolean {
    const rate = ctx.config.faults.lost_submit_response_rate;
    return rate > 0 && ctx.faultRandom() < rate;
  }

  /** Whether (and how) to garble a query's answer: faults.malformed_response_rate, see malformed.ts. */
  function drawMalformed(): MalformedKind | undefined {
    const rate = ctx.config.faults.malformed_response_rate;
    if (!(rate > 0) || ctx.malformedRandom() >= rate) return undefined;
    return MALFORMED_KINDS[Math.floor(ctx.malformedRandom() * MALFORMED_KINDS.length)] ?? 'truncated_json';
  }

  function drawFault(): ApiErrorCode {
    return SERVER_FAULT_CODES[Math.floor(ctx.faultRandom() * SERVER_FAULT_CODES.length)] ?? 'internal_error';
  }

  return server;
}
