// The OpenAI emulator's HTTP server: routing, then the checks each API request passes in a fixed
// order (route 404 -> injected 5xx -> Bearer key 401 -> the route's own checks), and the answer of
// whichever fails. Every request is counted by route pattern and status.
//
// Routes: POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content, POST/GET
// /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel, POST /v1/images/generations
// (the API); /_emulator/* (admin, no key).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { matchAdminRoute, requestTarget, sendJson } from '../core/index.js';
import type { OpenAIContext, RequestClass } from './context.js';
import { invalidUrl, OpenAIApiError, SERVER_FAULTS, type ServerFault } from './errors.js';
import { ADMIN_ROUTES, handleAdmin } from './routes/admin.js';
import { cancel, createBatch, getBatch, listBatches } from './routes/batches.js';
import { deleteFile, fileContent, getFile, listFiles, uploadFile } from './routes/files.js';
import { generateImages } from './routes/images.js';
import type { OpenAIKey } from './auth.js';

type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  key: OpenAIKey,
  id: string,
  query: URLSearchParams,
) => unknown;

interface ApiRoute {
  method: string;
  pattern: string;
  regex: RegExp;
  requestClass: RequestClass;
  handle: (ctx: OpenAIContext) => Handler;
}

const ID = '([A-Za-z0-9_-]+)';

const ROUTES: readonly ApiRoute[] = [
  route('POST', '/v1/files', 'upload', (ctx) => (req, res, key) => uploadFile(ctx, req, res, key)),
  route(
    'GET',
    '/v1/files',
    'files',
    (ctx) => (_req, res, key, _id, query) => listFiles(ctx, res, query, key),
  ),
  route('GET', '/v1/files/{id}', 'files', (ctx) => (_req, res, key, id) => getFile(ctx, res, id, key)),
  route('DELETE', '/v1/files/{id}', 'files', (ctx) => (_req, res, key, id) => deleteFile(ctx, res, id, key)),
  route(
    'GET',
    '/v1/files/{id}/content',
    'content',
    (ctx) => (req, res, key, id) => fileContent(ctx, req, res, id, key),
  ),
  route('POST', '/v1/batches', 'create_batch', (ctx) => (req, res, key) => createBatch(ctx, req, res, key)),
  route(
    'GET',
    '/v1/batches',
    'batches',
    (ctx) => (_req, res, key, _id, query) => listBatches(ctx, res, query, key),
  ),
  route('GET', '/v1/batches/{id}', 'batches', (ctx) => (_req, res, key, id) => getBatch(ctx, res, id, key)),
  route(
    'POST',
    '/v1/batches/{id}/cancel',
    'batches',
    (ctx) => (_req, res, key, id) => cancel(ctx, res, id, key),
  ),
  route(
    'POST',
    '/v1/images/generations',
    'images',
    (ctx) => (req, res, key) => generateImages(ctx, req, res, key),
  ),
];

function route(
  method: string,
  pattern: string,
  requestClass: RequestClass,
  handle: ApiRoute['handle'],
): ApiRoute {
  const regex = new RegExp(`^${pattern.replace('{id}', ID)}$`);
  return { method, pattern, regex, requestClass, handle };
}

function sendFault(res: ServerResponse, fault: ServerFault): void {
  res.writeHead(fault.status, {
    'content-type': fault.contentType,
    'content-length': Buffer.byteLength(fault.body),
  });
  res.end(fault.body);
}

export function createOpenAIServer(ctx: OpenAIContext): Server {
  const handlers = ROUTES.map((r) => ({ ...r, handler: r.handle(ctx) }));

  const server = createServer((req, res) => {
    dispatch(req, res).catch((error: unknown) => {
      const detail = error instanceof Error ? error.stack : String(error);
      ctx.log(`openai emulator: unexpected error on ${req.method} ${requestTarget(req).path}: ${detail}`);
      if (!res.headersSent) sendFault(res, SERVER_FAULTS[0]!);
      else res.destroy();
    });
  });

  async function dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { path, query } = requestTarget(req);
    const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
    let label = '(unmatched)';
    try {
      const admin = matchAdminRoute(method, path, ADMIN_ROUTES);
      if (admin?.kind === 'admin') {
        label = path;
        await handleAdmin(ctx, req, res, method, admin.name);
      } else {
        const found = handlers.find((r) => r.method === method && r.regex.test(path));
        if (!found) throw invalidUrl(req.method ?? 'GET', path);
        label = found.pattern;
        const status = ctx.serverFaults.draw(found.requestClass);
        if (status !== undefined) {
          ctx.stats.fault(`server_error_${found.requestClass}`);
          sendFault(res, SERVER_FAULTS.find((f) => f.status === status) ?? SERVER_FAULTS[0]!);
        } else {
          const auth = ctx.keys.authenticate(req.headers);
          if ('error' in auth) throw auth.error;
          const id = found.regex.exec(path)?.[1] ?? '';
          await found.handler(req, res, auth.key, id, query);
        }
      }
    } catch (error) {
      if (!(error instanceof OpenAIApiError)) throw error;
      if (res.headersSent) res.destroy();
      else sendJson(res, error.status, error.wire, error.headers);
    }
    // Counted once the status is known (0: the connection was dropped without an answer).
    ctx.stats.request(method, label, res.headersSent ? res.statusCode : 0);
  }

  return server;
}
