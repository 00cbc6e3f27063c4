// Counters every provider emulator keeps for tests and benchmarks: requests by route pattern and
// status, webhook attempts by outcome, faults injected by name; how late clients fetched results,
// as a share of the retention that would have deleted them; and the seeded 5xx fault drawn per
// request class (submit, status, result, ...), each class with its own rate.
import type { Random } from './random-streams.js';
import type { WebhookOutcome } from './webhooks.js';

export class CoreStats {
  readonly #requests = new Map<string, Map<number, number>>();
  readonly webhooks: Record<WebhookOutcome, number> = {
    delivered: 0,
    retryable_failure: 0,
    rejected: 0,
    gave_up: 0,
    lost: 0,
    duplicate_delivered: 0,
  };
  readonly #faults = new Map<string, number>();

  /** One answered request; `route` is the pattern (`GET /{owner}/{app}/requests/{id}`), never the path. */
  request(method: string, route: string, status: number): void {
    const label = `${method} ${route}`;
    let byStatus = this.#requests.get(label);
    if (!byStatus) this.#requests.set(label, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  webhook(outcome: WebhookOutcome): void {
    this.webhooks[outcome]++;
  }

  fault(name: string, count = 1): void {
    this.#faults.set(name, (this.#faults.get(name) ?? 0) + count);
  }

  faultCount(name: string): number {
    return this.#faults.get(name) ?? 0;
  }

  /** `{ "<METHOD> <route>": { "<status>": count } }`, statuses in order. */
  requests(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    for (const [label, byStatus] of this.#requests) {
      out[label] = Object.fromEntries(
        [...byStatus].sort((a, b) => a[0] - b[0]).map(([s, n]) => [String(s), n]),
      );
    }
    return out;
  }

  /** Requests of one route label with one status (0 when none). */
  requestCount(label: string, status: number): number {
    return this.#requests.get(label)?.get(status) ?? 0;
  }

  faults(): Record<string, number> {
    return Object.fromEntries(this.#faults);
  }
}

/** One result a client got: when it was ready, when the client first had it, and how long it is kept. */
export interface ResultFetch {
  readyAt: number;
  fetchedAt: number;
  /** From `readyAt`, how long a client can still get it (clock ms); Infinity when it is kept for ever. */
  retentionMs: number;
}

/**
 * How close clients came to losing results to retention: for each result fetched, the time from
 * its being ready to its first fetch over the time the provider keeps it (0: at once; 1: as it was
 * deleted). `max` and `p99` (nearest rank) are null when nothing was fetched. A result the
 * provider deleted unfetched is not here: each provider counts those itself.
 */
export interface RetentionShare {
  /** Results measured (fetched, with a retention to compare with). */
  results: number;
  max: number | null;
  p99: number | null;
}

/** Shares are rounded to 1e-6: a millisecond of a compressed 10-minute retention is still seen. */
const SHARE_DIGITS = 1e6;

export function retentionShare(fetches: Iterable<ResultFetch>): RetentionShare {
  const shares: number[] = [];
  for (const { readyAt, fetchedAt, retentionMs } of fetches) {
    // A zero retention leaves no time to fetch in; nothing meaningful to divide by.
    if (!(retentionMs > 0)) continue;
    shares.push(Math.max(0, fetchedAt - readyAt) / retentionMs);
  }
  if (shares.length === 0) return { results: 0, max: null, p99: null };
  shares.sort((a, b) => a - b);
  const round = (share: number): number => Math.round(share * SHARE_DIGITS) / SHARE_DIGITS;
  const rank = Math.ceil(0.99 * shares.length) - 1;
  return { results: shares.length, max: round(shares.at(-1)!), p99: round(shares[rank]!) };
}

/** The 5xx statuses a server fault is drawn from, uniformly. */
export const SERVER_FAULT_STATUSES = [500, 502, 503] as const;
export type ServerFaultStatus = (typeof SERVER_FAULT_STATUSES)[number];

/** Draws the injected 5xx of a request class; `undefined` means "serve it". */
export class ServerFaults<Class extends string> {
  constructor(
    private readonly random: Random,
    private readonly rates: () => Readonly<Partial<Record<Class, number>>>,
  ) {}

  draw(requestClass: Class): ServerFaultStatus | undefined {
    const rate = this.rates()[requestClass] ?? 0;
    if (!(rate > 0) || this.random() >= rate) return undefined;
    return SERVER_FAULT_STATUSES[Math.floor(this.random() * SERVER_FAULT_STATUSES.length)] ?? 500;
  }
}
