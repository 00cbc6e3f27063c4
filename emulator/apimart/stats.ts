// What the emulator observed, for tests and benchmarks: request counts by route and status,
// webhook attempts by outcome, the faults it injected, and a bounded log of recent requests.
//
// The log is a ring buffer of typed arrays (about 15 bytes a request), grown by doubling up to its
// capacity and then overwriting the oldest entries, so a 10,000-prompt rehearsal can be audited
// ("no one-second window above the rate limit") without the log growing without bound.
import type { MalformedKind } from './malformed.js';
import type { WebhookAttempt } from './webhooks.js';

/** A route as counted: method plus route pattern (e.g. `GET /v1/tasks/{id}`). */
export interface RouteLabel {
  readonly method: string;
  readonly route: string;
}

export interface RequestLogEntry {
  t_ms: number;
  method: string;
  route: string;
  status: number;
  /** `<account id>/<key position>` of the authenticated key, or null. Never the key itself. */
  key_id: string | null;
}

export type WebhookOutcome = WebhookAttempt['outcome'];
/** Faults the config asked for and the emulator really injected. */
export type InjectedFault =
  | 'server_error'
  | 'poisoned_submit'
  | 'stuck_task'
  | 'truncated_download'
  | 'webhook_duplicate'
  | 'lost_submit_response'
  | 'wrong_aspect_image'
  | 'blank_image'
  | 'corrupt_image'
  | 'jpeg_image'
  | MalformedKind;

const INITIAL_LOG_CAPACITY = 4096;
export const DEFAULT_REQUEST_LOG_CAPACITY = 1_000_000;

export class RequestStats {
  readonly webhooks: Record<WebhookOutcome, number> = {
    delivered: 0,
    retryable_failure: 0,
    rejected: 0,
    gave_up: 0,
  };
  readonly injected: Record<InjectedFault, number> = {
    server_error: 0,
    poisoned_submit: 0,
    stuck_task: 0,
    truncated_download: 0,
    webhook_duplicate: 0,
    lost_submit_response: 0,
    wrong_aspect_image: 0,
    blank_image: 0,
    corrupt_image: 0,
    jpeg_image: 0,
    truncated_json: 0,
    extra_fields: 0,
    unknown_status: 0,
  };
  /** Submits answered with the task an earlier one of the same Idempotency-Key created. */
  idempotentReplays = 0;
  private readonly labels: RouteLabel[] = [];
  private readonly labelIndex = new Map<string, number>();
  private readonly counts: Map<number, number>[] = [];
  private readonly log: RequestLog;

  constructor(
    /** Turns a key index back into its loggable label. */
    private readonly keyLabel: (index: number) => string | undefined,
    logCapacity = DEFAULT_REQUEST_LOG_CAPACITY,
  ) {
    this.log = new RequestLog(logCapacity);
  }

  /** A stable small id for a route label; resolve once per route, not per request. */
  labelId(method: string, route: string): number {
    const text = `${method} ${route}`;
    let id = this.labelIndex.get(text);
    if (id === undefined) {
      id = this.labels.length;
      this.labels.push({ method, route });
      this.labelIndex.set(text, id);
      this.counts.push(new Map());
    }
    return id;
  }

  record(labelId: number, status: number, keyIndex: number, tMs: number): void {
    const counts = this.counts[labelId];
    if (counts) counts.set(status, (counts.get(status) ?? 0) + 1);
    this.log.push(tMs, labelId, status, keyIndex);
  }

  recordWebhook(outcome: WebhookOutcome): void {
    this.webhooks[outcome]++;
  }

  recordFault(fault: InjectedFault): void {
    this.injected[fault]++;
  }

  /** `{ "<METHOD> <route>": { "<status>": count } }`, routes never requested left out. */
  requestCounts(): Record<string, Record<string, number>> {
    const out: Record<string, Record<string, number>> = {};
    this.labels.forEach((label, id) => {
      const counts = this.counts[id];
      if (!counts || counts.size === 0) return;
      const byStatus: Record<string, number> = {};
      for (const [status, count] of [...counts].sort((a, b) => a[0] - b[0])) byStatus[String(status)] = count;
      out[`${label.method} ${label.route}`] = byStatus;
    });
    return out;
  }

  /** Logged requests with t_ms >= sinceMs, oldest first. */
  *requestsSince(sinceMs: number): Generator<RequestLogEntry> {
    for (const [tMs, labelId, status, keyIndex] of this.log.entriesSince(sinceMs)) {
      const label = this.labels[labelId];
      yield {
        t_ms: tMs,
        method: label?.method ?? '?',
        route: label?.route ?? '?',
        status,
        key_id: keyIndex < 0 ? null : (this.keyLabel(keyIndex) ?? null),
      };
    }
  }
}

class RequestLog {
  private times: Float64Array;
  private labels: Uint16Array;
  private statuses: Uint16Array;
  private keys: Int32Array;
  /** Index the next entry is written to. */
  private next = 0;
  private count = 0;

  constructor(private readonly capacity: number) {
    const initial = Math.min(capacity, INITIAL_LOG_CAPACITY);
    this.times = new Float64Array(initial);
    this.labels = new Uint16Array(initial);
    this.statuses = new Uint16Array(initial);
    this.keys = new Int32Array(initial);
  }

  push(tMs: number, labelId: number, status: number, keyIndex: number): void {
    if (this.count === this.times.length && this.count < this.capacity) this.grow();
    const i = this.next;
    this.times[i] = tMs;
    this.labels[i] = labelId;
    this.statuses[i] = status;
    this.keys[i] = keyIndex;
    this.next = (i + 1) % this.times.length;
    if (this.count < this.times.length) this.count++;
  }

  /** Only called while the buffer has never wrapped, so entries are in order from index 0. */
  private grow(): void {
    const size = Math.min(this.capacity, this.times.length * 2);
    const grown = <T extends Float64Array | Uint16Array | Int32Array>(old: T, make: (n: number) => T): T => {
      const array = make(size);
      array.set(old as never);
      return array;
    };
    this.times = grown(this.times, (n) => new Float64Array(n));
    this.labels = grown(this.labels, (n) => new Uint16Array(n));
    this.statuses = grown(this.statuses, (n) => new Uint16Array(n));
    this.keys = grown(this.keys, (n) => new Int32Array(n));
    this.next = this.count;
  }

  *entriesSince(sinceMs: number): Generator<[number, number, number, number]> {
    const length = this.times.length;
    const oldest = this.count < length ? 0 : this.next;
    for (let k = 0; k < this.count; k++) {
      const i = (oldest + k) % length;
      const t = this.times[i]!;
      if (t >= sinceMs) yield [t, this.labels[i]!, this.statuses[i]!, this.keys[i]!];
    }
  }
}
