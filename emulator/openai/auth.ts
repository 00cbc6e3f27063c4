// API keys (`Authorization: Bearer <key>`) and the accounts (OpenAI's organizations) they belong to.
// A missing header and an unknown or disabled key both answer 401 with OpenAI's words; files and
// batches belong to the account, so another account's ids are not found.
//
// Keys are labelled `<account>/<position>` for stats and ground truth: never by value.
import type { IncomingHttpHeaders } from 'node:http';
import type { OpenAIConfig } from './config.js';
import { invalidKey, missingKey, type OpenAIApiError } from './errors.js';

export interface OpenAIKey {
  readonly label: string;
  readonly account: string;
}

export class OpenAIKeyRing {
  readonly #byToken = new Map<string, OpenAIKey>();
  readonly #disabled = new Set<string>();

  constructor(accounts: OpenAIConfig['accounts']) {
    for (const account of accounts) {
      account.keys.forEach((key, position) => {
        this.#byToken.set(key.key, { label: `${account.id}/${position}`, account: account.id });
        if (key.status !== 'active') this.#disabled.add(key.key);
      });
    }
  }

  authenticate(headers: IncomingHttpHeaders): { key: OpenAIKey } | { error: OpenAIApiError } {
    const header = headers.authorization;
    if (header === undefined || header.trim() === '') return { error: missingKey() };
    const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
    const token = match?.[1];
    const key = token === undefined ? undefined : this.#byToken.get(token);
    if (!key || this.#disabled.has(token!)) return { error: invalidKey() };
    return { key };
  }
}
