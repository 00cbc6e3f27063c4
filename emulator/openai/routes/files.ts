// The Files API: POST /v1/files (multipart: `purpose`, `file`), GET /v1/files (`purpose`, `after`,
// `limit` 1-10,000 default 10,000, `order`), GET and DELETE /v1/files/{id}, and GET
// /v1/files/{id}/content, which streams uploaded bytes or a batch's generated output and error
// files, honours `Range: bytes=N-` (206 with Content-Range), and applies the cut-download fault.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJson } from '../../core/index.js';
import { batchFileOf, contentOf, type OpenAIContext } from '../context.js';
import type { BatchFileContent } from '../output-file.js';
import { invalidRequest, invalidValue, noSuchFile } from '../errors.js';
import { fileJson, pageOf, UPLOAD_PURPOSES, type StoredFile } from '../files.js';
import { fileId } from '../ids.js';
import { readForm } from '../multipart.js';
import type { OpenAIKey } from '../auth.js';

const MAX_LIST = 10_000;

export async function uploadFile(
  ctx: OpenAIContext,
  req: IncomingMessage,
  res: ServerResponse,
  key: OpenAIKey,
): Promise<void> {
  const form = await readForm(req, ctx.config.limits.max_upload_bytes);
  if (form.kind === 'too_large') {
    res.setHeader('connection', 'close');
    throw invalidRequest(
      `File is too large. The maximum file size is ${ctx.config.limits.max_upload_bytes} bytes.`,
      'file',
      'file_too_large',
      413,
    );
  }
  if (form.kind === 'not_multipart')
    throw invalidRequest('The request must be multipart/form-data with a `file` and a `purpose`.', null);
  const purpose = form.parts
    .find((p) => p.name === 'purpose' && p.filename === undefined)
    ?.data.toString('utf8');
  const file = form.parts.find((p) => p.name === 'file' && p.filename !== undefined);
  if (purpose === undefined)
    throw invalidRequest("Missing required parameter: 'purpose'.", 'purpose', 'missing_required_parameter');
  if (!(UPLOAD_PURPOSES as readonly string[]).includes(purpose))
    throw invalidValue('purpose', purpose, UPLOAD_PURPOSES);
  if (!file)
    throw invalidRequest("Missing required parameter: 'file'.", 'file', 'missing_required_parameter');
  if (purpose === 'batch' && !file.filename!.endsWith('.jsonl'))
    throw invalidRequest('Invalid file format for Batch API. Must be .jsonl', 'file', 'invalid_file_format');
  const stored = {
    kind: 'upload' as const,
    id: fileId(ctx.random.ids),
    account: key.account,
    filename: file.filename!,
    purpose,
    bytes: file.data.length,
    createdAt: ctx.clock.now(),
    data: Buffer.from(file.data),
  };
  ctx.uploads.add(stored);
  const { data: _data, kind: _kind, ...meta } = stored;
  ctx.journal?.append({ kind: 'custom', at: stored.createdAt, name: 'file', payload: meta });
  sendJson(res, 200, fileJson(stored, stored.bytes));
}

/** The file `id` of the caller's account as the API sees it now, or 404. */
function findFile(ctx: OpenAIContext, id: string, key: OpenAIKey): StoredFile {
  const file = ctx.uploads.get(id, key.account) ?? batchFileOf(ctx, id, key.account);
  if (!file) throw noSuchFile(id);
  return file;
}

async function bytesOf(ctx: OpenAIContext, file: StoredFile): Promise<number> {
  return file.kind === 'upload' ? file.bytes : contentOf(ctx, file).size();
}

export async function getFile(
  ctx: OpenAIContext,
  res: ServerResponse,
  id: string,
  key: OpenAIKey,
): Promise<void> {
  const file = findFile(ctx, id, key);
  sendJson(res, 200, fileJson(file, await bytesOf(ctx, file)));
}

export function deleteFile(ctx: OpenAIContext, res: ServerResponse, id: string, key: OpenAIKey): void {
  findFile(ctx, id, key);
  ctx.uploads.delete(id);
  ctx.journal?.append({ kind: 'custom', at: ctx.clock.now(), name: 'file_deleted', payload: { id } });
  sendJson(res, 200, { id, object: 'file', deleted: true });
}

export async function listFiles(
  ctx: OpenAIContext,
  res: ServerResponse,
  query: URLSearchParams,
  key: OpenAIKey,
): Promise<void> {
  const limit = query.has('limit') ? Number(query.get('limit')) : MAX_LIST;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST)
    throw invalidRequest(
      `Invalid 'limit': must be an integer between 1 and ${MAX_LIST}.`,
      'limit',
      'invalid_value',
    );
  const order = query.get('order') ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw invalidValue('order', order, ['asc', 'desc']);
  const files: (StoredFile & { purpose: string })[] = [...ctx.uploads.of(key.account)];
  for (const id of ctx.batchFiles.keys()) {
    const file = batchFileOf(ctx, id, key.account);
    if (file) files.push({ ...file, purpose: 'batch_output' });
  }
  const { items, hasMore } = pageOf(files, {
    purpose: query.get('purpose') ?? undefined,
    after: query.get('after') ?? undefined,
    limit,
    order,
  });
  const data = await Promise.all(items.map(async (file) => fileJson(file, await bytesOf(ctx, file))));
  sendJson(res, 200, {
    object: 'list',
    data,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    has_more: hasMore,
  });
}

/** `bytes=N-` or `bytes=N-M` (one range); undefined when absent; 'invalid' when not satisfiable. */
function parseRange(
  header: string | undefined,
  size: number,
): { from: number; to: number } | 'invalid' | undefined {
  if (header === undefined) return undefined;
  const match = /^bytes=(\d+)-(\d*)$/.exec(header.trim());
  if (!match) return 'invalid';
  const from = Number(match[1]);
  const to = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1);
  return from < size && from <= to ? { from, to } : 'invalid';
}

export async function fileContent(
  ctx: OpenAIContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
  key: OpenAIKey,
): Promise<void> {
  const file = findFile(ctx, id, key);
  const content = file.kind === 'upload' ? undefined : contentOf(ctx, file);
  // A first whole download of a batch file starts at once, chunked; a Range needs the size first.
  const size = req.headers.range === undefined && content ? content.knownSize() : await bytesOf(ctx, file);
  const range = size === undefined ? undefined : parseRange(req.headers.range, size);
  if (range === 'invalid') {
    res.writeHead(416, { 'content-range': `bytes */${size}`, 'content-type': 'application/json' });
    res.end(JSON.stringify(invalidRequest('Requested range not satisfiable.', 'range', null, 416).wire));
    return;
  }
  const from = range?.from ?? 0;
  const to = range?.to ?? (size === undefined ? Infinity : size - 1);
  const filename = file.kind === 'upload' ? file.filename : `batch_${file.batchId}_${file.kind}.jsonl`;
  const headers: Record<string, string | number> = {
    'content-type': 'application/octet-stream',
    'content-disposition': `attachment; filename="${filename}"`,
    'accept-ranges': 'bytes',
  };
  if (size !== undefined) headers['content-length'] = Math.max(0, to - from + 1);
  if (range) {
    headers['content-range'] = `bytes ${from}-${to}/${size}`;
    ctx.served.ranges++;
  }
  res.writeHead(range ? 206 : 200, headers);
  if (req.method === 'HEAD' || size === 0 || (content && content.lines === 0)) {
    res.end();
    return;
  }
  const sink = new Sink(res, to - from + 1, content ? cutPoint(ctx, file.id) : undefined);
  if (file.kind === 'upload') await sink.write(file.data.subarray(from, to + 1));
  else await sendLines(content!, from, sink);
  ctx.served.bytes += sink.sent;
  // Every line ends with the only newline it has (JSON escapes those in strings): count the ends sent.
  if (content) ctx.served.lines += sink.newlines;
  if (sink.cut) {
    ctx.stats.fault('output_download_cut');
    // Once the bytes before the cut reached the socket, so the client really has them.
    res.write('', () => res.destroy());
  } else if (!res.destroyed) res.end();
}

/** The lines from byte `from` on, generated one after the other. */
async function sendLines(content: BatchFileContent, from: number, sink: Sink): Promise<void> {
  const { line, start } = from === 0 ? { line: 0, start: 0 } : await content.lineAt(from);
  let skip = from - start;
  for (let l = line; l < content.lines && !sink.done; l++) {
    for await (const chunk of content.lineChunks(l)) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      await sink.write(skip > 0 ? chunk.subarray(skip) : chunk);
      skip = 0;
      if (sink.done) break;
    }
  }
}

/** After how many bytes this response is cut, per cut_output_mode; undefined: not cut. */
function cutPoint(ctx: OpenAIContext, id: string): number | undefined {
  const { cut_output_after_bytes: after, cut_output_mode: mode } = ctx.config.faults;
  if (after === null) return undefined;
  if (mode === 'once_per_file') {
    if (ctx.served.cutFiles.has(id)) return undefined;
    ctx.served.cutFiles.add(id);
  }
  return after;
}

/** Writes at most `limit` bytes (or `cutAfter`), waiting for 'drain'; stops when the client leaves. */
class Sink {
  sent = 0;
  cut = false;
  /** Newline bytes written. */
  newlines = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly limit: number,
    private readonly cutAfter: number | undefined,
  ) {}

  get done(): boolean {
    return this.cut || this.sent >= this.limit || this.res.destroyed;
  }

  async write(chunk: Buffer): Promise<void> {
    if (this.done) return;
    let room = this.limit - this.sent;
    if (this.cutAfter !== undefined && this.cutAfter - this.sent < room) room = this.cutAfter - this.sent;
    const piece = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.sent += piece.length;
    for (let at = piece.indexOf(0x0a); at >= 0; at = piece.indexOf(0x0a, at + 1)) this.newlines++;
    if (this.cutAfter !== undefined && this.sent >= this.cutAfter && this.sent < this.limit) this.cut = true;
    if (!this.res.write(piece)) await drained(this.res);
  }
}

function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
