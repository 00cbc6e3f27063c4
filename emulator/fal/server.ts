// The fal emulator's HTTP server: routing of fal's queue paths and the emulator's own, and the
// checks every queue request passes in order (key 401/403 -> injected 5xx -> the route's own
// answer). A model id may carry a sub-path (fal-ai/flux/dev); request URLs use only owner/app
// (namespaced apps such as workflows/owner/app keep their namespace).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { ADMIN_PREFIX, matchAdminRoute, type AdminMatch } from '../core/admin-routes.js';
import { requestTarget, sendJson } from '../core/http.js';
import { authenticate } from './auth.js';
import type { FalContext, RequestClass } from './context.js';
import { ADMIN_ROUTES, handleAdmin } from './routes/admin.js';
import { CDN_ROUTE, handleCdn } from './routes/cdn.js';
import {
  findRequest,
  handleCancel,
  handleResult,
  handleStatus,
  handleStatusStream,
} from './routes/requests.js';
import { handleSubmit } from './routes/submit.js';
import { JWKS_PATH } from './signing.js';
import { CDN_PREFIX, notFound, requestError, type Answer } from './wire.js';

/** App ids with one more leading segment (fal-js and fal_client know these two). */
const NAMESPACES = new Set(['workflows', 'comfy']);
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const ROUTES = {
  submit: { label: '/{model_id}', method: 'POST' },
  status: { label: '/{owner}/{app}/requests/{request_id}/status', method: 'GET' },
  stream: { label: '/{owner}/{app}/requests/{request_id}/status/stream', method: 'GET' },
  result: { label: '/{owner}/{app}/requests/{request_id}', method: 'GET' },
  cancel: { label: '/{owner}/{app}/requests/{request_id}/cancel', method: 'PUT' },
} as const;
type QueueRoute = keyof typeof ROUTES;

type Resolved =
  | { kind: 'queue'; route: QueueRoute; app: string; model: string; id: string }
  | { kind: 'cdn'; rest: string }
  | { kind: 'jwks' }
  | AdminMatch
  | { kind: 'unmatched' };

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

function resolve(method: string, path: string): Resolved {
  if (path === JWKS_PATH) return { kind: 'jwks' };
  if (path.startsWith(CDN_PREFIX)) return { kind: 'cdn', rest: path.slice(CDN_PREFIX.length) };
  if (path.startsWith(ADMIN_PREFIX))
    return matchAdminRoute(method, path, ADMIN_ROUTES) ?? { kind: 'unmatched' };
  const segments = path.split('/').slice(1).map(decode);
  if (segments.some((segment) => segment === '')) return { kind: 'unmatched' };
  const appLength = NAMESPACES.has(segments[0] ?? '') ? 3 : 2;
  if (segments.length < appLength) return { kind: 'unmatched' };
  const app = segments.slice(0, appLength).join('/');
  if (segments[appLength] === 'requests' && segments.length > appLength + 1) {
    const id = segments[appLength + 1]!;
    const rest = segments.slice(appLength + 2).join('/');
    const route: QueueRoute | undefined =
      rest === ''
        ? 'result'
        : rest === 'status'
          ? 'status'
          : rest === 'status/stream'
            ? 'stream'
            : rest === 'cancel'
              ? 'cancel'
              : undefined;
    return route ? { kind: 'queue', route, app, model: app, id } : { kind: 'unmatched' };
  }
  return { kind: 'queue', route: 'submit', app, model: segments.join('/'), id: '' };
}

export function createFalServer(ctx: FalContext, log: (line: string) => void): Server {
  const { stats } = ctx;
  return createServer((req, res) => {
    let label = '(unmatched)';
    const method = KNOWN_METHODS.has(req.method ?? '') ? req.method! : 'OTHER';
    res.once('finish', () => stats.request(method, label, res.statusCode));
    // A response cut off (a truncated download, a dropped submit) counts with the status it began
    // with, or 0 when it never began.
    res.once('close', () => {
      if (!res.writableFinished) stats.request(method, label, res.headersSent ? res.statusCode : 0);
    });
    dispatch(req, res, method, (l) => (label = l)).catch((error: unknown) => {
      log(
        `fal emulator: unexpected error on ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}`,
      );
      if (!res.headersSent) send(res, requestError(500, 'Internal server error', 'internal_error'));
      else res.destroy();
    });
  });

  async function dispatch(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    setLabel: (label: string) => void,
  ): Promise<void> {
    const { path, query } = requestTarget(req);
    const resolved = resolve(method, path);
    switch (resolved.kind) {
      case 'jwks':
        setLabel(JWKS_PATH);
        return send(
          res,
          method === 'GET' || method === 'HEAD'
            ? { status: 200, body: ctx.signer.jwks() }
            : wrongMethod('GET'),
        );
      case 'cdn': {
        setLabel(CDN_ROUTE);
        if (method !== 'GET' && method !== 'HEAD') return send(res, wrongMethod('GET, HEAD'));
        const fault = ctx.faults.draw('cdn');
        if (fault) return send(res, injected(fault));
        const answer = await handleCdn(ctx, req, res, resolved.rest);
        if (answer) send(res, answer);
        return;
      }
      case 'wrong_method':
        setLabel(resolved.pattern);
        return send(res, wrongMethod(resolved.allow));
      case 'admin': {
        setLabel(`${ADMIN_PREFIX}${resolved.name}`);
        const answer = await handleAdmin(ctx, req, res, method, resolved.name);
        if (answer) send(res, answer);
        return;
      }
      case 'unmatched':
        return send(res, { status: 404, body: { detail: 'Not Found' } });
      case 'queue':
        break;
    }
    const route = ROUTES[resolved.route];
    setLabel(route.label);
    if (method !== route.method) {
      // A GET of a model id is not a route; a wrong method on a request route is.
      return send(
        res,
        resolved.route === 'submit' && method === 'GET'
          ? { status: 404, body: { detail: 'Not Found' } }
          : wrongMethod(route.method),
      );
    }
    const auth = authenticate(ctx, req);
    if ('refusal' in auth) return send(res, auth.refusal);
    const requestClass: RequestClass = resolved.route === 'stream' ? 'status' : resolved.route;
    const fault = ctx.faults.draw(requestClass);
    if (fault) return send(res, injected(fault));

    if (resolved.route === 'submit') {
      const model =
        ctx.config.models[resolved.model] ??
        (ctx.config.accept_unknown_models ? ctx.config.default_model : undefined);
      if (!model)
        return send(res, { status: 404, body: { detail: `Application '${resolved.app}' not found` } });
      const { answer, dropConnection } = await handleSubmit(ctx, req, query, auth.key, resolved, model);
      if (dropConnection) {
        res.destroy();
        return;
      }
      return send(res, answer);
    }
    const job = findRequest(ctx, auth.key, resolved.app, resolved.id);
    switch (resolved.route) {
      case 'status':
        return send(res, handleStatus(ctx, job, query));
      case 'stream':
        if (!job) return send(res, notFound());
        return handleStatusStream(ctx, job, query, res);
      case 'result':
        return send(res, await handleResult(ctx, job));
      case 'cancel':
        return send(res, handleCancel(ctx, job));
    }
  }

  function injected(status: number): Answer {
    ctx.stats.fault('server_error');
    const detail =
      status === 502 ? 'Bad gateway' : status === 503 ? 'Service unavailable' : 'Internal server error';
    return requestError(status, detail, 'internal_error');
  }
}

function wrongMethod(allowed: string): Answer {
  return { status: 405, body: { detail: 'Method Not Allowed' }, headers: { allow: allowed } };
}

function send(res: ServerResponse, answer: Answer): void {
  sendJson(res, answer.status, answer.body, answer.headers);
}
