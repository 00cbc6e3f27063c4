// The API account a run belongs to: the image API's base URL and the key it is called with. Runs,
// workers and task queues name an account by its id, a fingerprint of both from which neither the
// key nor any credential in the URL can be recovered (scrypt, so that guessing a short key from a
// queue name is slow). The id may appear in task queue names, workflow inputs and logs.
import { scryptSync } from 'node:crypto';

/** `a` and 16 hex digits: the same for the same base URL and key, wherever it is computed. */
export function apiAccountId(baseUrl: string, apiKey: string): string {
  const url = new URL(baseUrl).href.replace(/\/+$/, '');
  return `a${scryptSync(apiKey, `pixelmill api account ${url}`, 8).toString('hex')}`;
}

/** The base URL as messages and workflow inputs show it: without credentials or trailing slash. */
export function displayBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  url.username = '';
  url.password = '';
  return url.href.replace(/\/+$/, '');
}

/** What an account id looks like. */
export const API_ACCOUNT_ID = /^a[0-9a-f]{16}$/;
