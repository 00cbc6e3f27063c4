// API keys (`x-key` header) and the accounts they belong to. A missing header and a key BFL does
// not know both answer 403 (FastAPI's APIKeyHeader says "Not authenticated"; BFL's own check adds
// "- Invalid Authentication", as users report). A disabled key is an invalid one.
//
// Keys are labelled `<account>/<position>` for logs, stats and ground truth: never by value.
import type { IncomingHttpHeaders } from 'node:http';
import type { BflConfig } from './config.js';
import { invalidKey, missingKey, type BflApiError } from './errors.js';

export interface BflKey {
  readonly label: string;
  readonly account: string;
}

export class BflKeyRing {
  readonly #byToken = new Map<string, BflKey>();
  readonly #disabled = new Set<string>();

  constructor(accounts: BflConfig['accounts']) {
    for (const account of accounts) {
      account.keys.forEach((key, position) => {
        this.#byToken.set(key.key, { label: `${account.id}/${position}`, account: account.id });
        if (key.status !== 'active') this.#disabled.add(key.key);
      });
    }
  }

  authenticate(headers: IncomingHttpHeaders): { key: BflKey } | { error: BflApiError } {
    const header = headers['x-key'];
    const token = Array.isArray(header) ? header[0] : header;
    if (token === undefined || token === '') return { error: missingKey() };
    const key = this.#byToken.get(token);
    if (!key || this.#disabled.has(token)) return { error: invalidKey() };
    return { key };
  }
}
