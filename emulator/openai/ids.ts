// Ids as OpenAI shapes them (`file-` + 22 base62 characters, `batch_` and `batch_req_` + 32 hex),
// derived from the seed so that a run repeats, and hashes of a batch's identity for the ids and
// random streams of what it produces (its output files, each line's id, the lines' order), which
// must not depend on how many requests came before.
import { createHash } from 'node:crypto';
import type { Random } from '../core/index.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

export function fileId(random: Random): string {
  let id = 'file-';
  for (let i = 0; i < 22; i++) id += BASE62[Math.floor(random() * 62)];
  return id;
}

export function hex32(random: Random): string {
  let out = '';
  for (let i = 0; i < 32; i++) out += Math.floor(random() * 16).toString(16);
  return out;
}

/** 32 hex characters of sha256 over the parts: stable across restarts. */
export function digest(...parts: (string | number)[]): string {
  return createHash('sha256').update(parts.join('\u0000')).digest('hex').slice(0, 32);
}

/** A 32-bit seed from a digest, for a random stream of its own. */
export function seedOf(...parts: (string | number)[]): number {
  return Number.parseInt(digest(...parts).slice(0, 8), 16) | 0;
}

/** A file id that is a function of `parts` (the output and error files of a batch). */
export function derivedFileId(...parts: (string | number)[]): string {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest();
  let id = 'file-';
  for (let i = 0; i < 22; i++) id += BASE62[hex[i]! % 62];
  return id;
}
