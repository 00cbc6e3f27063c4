// A small multipart/form-data reader for POST /v1/files (RFC 7578): the fields by name, each with
// its filename when it is a file part. The body is read whole under a size cap (an input file is
// stored anyway); a body that does not parse is `undefined`, answered as OpenAI answers a bad upload.
import type { IncomingMessage } from 'node:http';
import { readBody } from '../../common/http-body.js';

export interface FormPart {
  name: string;
  filename: string | undefined;
  data: Buffer;
}

export type FormBody =
  { kind: 'too_large' } | { kind: 'not_multipart' } | { kind: 'form'; parts: FormPart[] };

export async function readForm(req: IncomingMessage, limit: number): Promise<FormBody> {
  const type = req.headers['content-type'] ?? '';
  const boundary = /^multipart\/form-data\s*;.*?boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(type);
  if (!boundary) return { kind: 'not_multipart' };
  const body = await readBody(req, limit);
  if (body === undefined) return { kind: 'too_large' };
  const parts = parseParts(body, boundary[1] ?? boundary[2]!);
  return parts ? { kind: 'form', parts } : { kind: 'not_multipart' };
}

function parseParts(body: Buffer, boundary: string): FormPart[] | undefined {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: FormPart[] = [];
  let at = body.indexOf(delimiter);
  if (at < 0) return undefined;
  for (;;) {
    at += delimiter.length;
    // `--` after a delimiter closes the body.
    if (body[at] === 0x2d && body[at + 1] === 0x2d) return parts;
    const headersEnd = body.indexOf('\r\n\r\n', at);
    if (headersEnd < 0) return undefined;
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headersEnd + 4);
    if (next < 0) return undefined;
    const headers = body.subarray(at, headersEnd).toString('utf8');
    const disposition = /content-disposition:\s*form-data([^\r\n]*)/i.exec(headers)?.[1] ?? '';
    const name = /;\s*name="([^"]*)"/i.exec(disposition)?.[1];
    const filename = /;\s*filename="([^"]*)"/i.exec(disposition)?.[1];
    if (name === undefined) return undefined;
    parts.push({ name, filename, data: body.subarray(headersEnd + 4, next) });
    at = next + 2;
  }
}
