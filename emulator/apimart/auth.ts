// Accounts and bearer API keys (spec part 5): who is calling, and their live credit balance.
//
// Keys are looked up in one Map by the exact bearer token. Each key also gets a small integer
// index, used by the rate limiter's typed arrays and, as `<account>/<n>`, in the request log:
// logs name a key by position, never by its secret value.
import type { IncomingHttpHeaders } from 'node:http';
import type { AccountConfig, KeyStatus } from './config.js';
import type { ApiErrorCode } from './errors.js';

export interface AccountState {
  readonly id: string;
  readonly webhookSecret: string;
  /** Spendable balance: configured credits minus reservations, plus refunds of failed tasks. */
  credits: number;
}

export interface ApiKey {
  /** Position of the key among all keys of the config, from 0. */
  readonly index: number;
  /** `<account id>/<position in that account's keys>`: safe to log. */
  readonly label: string;
  readonly status: KeyStatus;
  readonly account: AccountState;
}

export type AuthResult = { ok: true; key: ApiKey } | { ok: false; code: ApiErrorCode };

const STATUS_ERRORS: Record<KeyStatus, ApiErrorCode | undefined> = {
  active: undefined,
  disabled: 'api_key_disabled',
  expired: 'api_key_expired',
};

export class KeyRing {
  readonly keys: readonly ApiKey[];
  private readonly byToken = new Map<string, ApiKey>();

  constructor(accounts: readonly AccountConfig[]) {
    const keys: ApiKey[] = [];
    for (const account of accounts) {
      const state: AccountState = {
        id: account.id,
        webhookSecret: account.webhook_secret,
        credits: account.credits,
      };
      account.keys.forEach((key, position) => {
        const apiKey: ApiKey = {
          index: keys.length,
          label: `${account.id}/${position}`,
          status: key.status,
          account: state,
        };
        keys.push(apiKey);
        this.byToken.set(key.key, apiKey);
      });
    }
    this.keys = keys;
  }

  authenticate(headers: IncomingHttpHeaders): AuthResult {
    const header = headers.authorization;
    if (header === undefined || header.trim() === '') return { ok: false, code: 'missing_api_key' };
    // The scheme is case-insensitive (RFC 7235); anything but a bearer token cannot be a valid key.
    const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
    const key = match?.[1] === undefined ? undefined : this.byToken.get(match[1]);
    if (!key) return { ok: false, code: 'invalid_api_key' };
    const refusal = STATUS_ERRORS[key.status];
    return refusal ? { ok: false, code: refusal } : { ok: true, key };
  }
}
