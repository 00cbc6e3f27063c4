// fal's key authentication: `Authorization: Key <key>` (the scheme case-insensitive). Answers of
// a refused key carry `detail` like every platform error; the key itself is never echoed.
import type { IncomingMessage } from 'node:http';
import type { FalContext, FalKey } from './context.js';
import type { Answer } from './wire.js';

export function authenticate(ctx: FalContext, req: IncomingMessage): { key: FalKey } | { refusal: Answer } {
  const header = req.headers.authorization;
  if (header === undefined || header.trim() === '')
    return { refusal: { status: 401, body: { detail: 'Missing authorization header' } } };
  const match = /^\s*key\s+(\S+)\s*$/i.exec(header);
  const key = match?.[1] === undefined ? undefined : ctx.keys.get(match[1]);
  if (!key) return { refusal: { status: 401, body: { detail: 'Invalid credentials' } } };
  if (key.status !== 'active') return { refusal: { status: 403, body: { detail: 'This key is disabled' } } };
  return { key };
}
