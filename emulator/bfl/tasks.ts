// What the emulator keeps per BFL task beside core's job, and the two per-account books that
// decide whether a submit is accepted: active tasks (BFL refuses a submit over 24 active tasks
// with a 429, some models over fewer) and credits (402 when the balance is below the cost).
//
// Both are computed from job end times, which are fixed at submit (BFL has no cancel and no
// queue the client sees), so the books only need pruning when read: no timer per task.
import type { Job } from '../core/index.js';
import type { BflModel, OutputFormat } from './models.js';

/** A task's own data, journaled with its job (JSON-serializable). */
export interface BflTaskData {
  model: BflModel;
  /** The key that submitted it, as `<account>/<position>`: never the key itself. */
  key: string;
  prompt: string;
  /** As sent, or drawn when the request had none (result.seed reports it). */
  seed: number;
  format: OutputFormat;
  width: number;
  height: number;
  cost: number;
  inputMp: number;
  outputMp: number;
  /** Which moderation flags it, if one does: before generation (request) or after (content). */
  moderation: 'request' | 'content' | null;
  /** Kept to sign its webhook (a restarted emulator must still sign it); never logged. */
  webhookSecret: string | null;
}

export type BflJob = Job<BflTaskData>;

/** Jobs still active (not ended) per scope (account or key), and per scope and model. */
export class ActiveTasks {
  readonly #byScope = new Map<string, BflJob[]>();

  add(scope: string, job: BflJob): void {
    let jobs = this.#byScope.get(scope);
    if (!jobs) this.#byScope.set(scope, (jobs = []));
    jobs.push(job);
  }

  /** Active jobs of `scope` at `now`, and of those the ones of `model`. */
  count(scope: string, model: BflModel, now: number): { all: number; model: number } {
    const jobs = this.#byScope.get(scope);
    if (!jobs) return { all: 0, model: 0 };
    const active = jobs.filter((job) => !job.hasEndedAt(now));
    this.#byScope.set(scope, active);
    let ofModel = 0;
    for (const job of active) if (job.data.model === model) ofModel++;
    return { all: active.length, model: ofModel };
  }
}

/**
 * Credits per account: a task's cost is taken at submit; a task that ends moderated (never
 * charged, help.bfl.ai) or in Error (unless billing.charge_errors) gets it back when it ends.
 */
export class CreditLedger {
  readonly #balances = new Map<string, number>();
  readonly #pendingRefunds = new Map<string, BflJob[]>();
  #charged = 0;
  #refunded = 0;

  constructor(
    initial: readonly { id: string; credits: number }[],
    private readonly chargeErrors: boolean,
  ) {
    for (const account of initial) this.#balances.set(account.id, account.credits);
  }

  /** Whether `job` gets its cost back once it ends. */
  refundable(job: BflJob): boolean {
    const planned = job.record.planned;
    return planned === 'moderated' || (planned === 'failed' && !this.chargeErrors);
  }

  balance(account: string, now: number): number {
    this.#settle(account, now);
    return this.#balances.get(account) ?? 0;
  }

  take(job: BflJob): void {
    const account = job.account;
    this.#balances.set(account, round((this.#balances.get(account) ?? 0) - job.data.cost));
    this.#charged += job.data.cost;
    if (this.refundable(job)) {
      let pending = this.#pendingRefunds.get(account);
      if (!pending) this.#pendingRefunds.set(account, (pending = []));
      pending.push(job);
    }
  }

  /** Credits taken and given back so far, over every account. */
  totals(now: number): { taken: number; refunded: number } {
    for (const account of this.#pendingRefunds.keys()) this.#settle(account, now);
    return { taken: round(this.#charged), refunded: round(this.#refunded) };
  }

  #settle(account: string, now: number): void {
    const pending = this.#pendingRefunds.get(account);
    if (!pending || pending.length === 0) return;
    const still: BflJob[] = [];
    let back = 0;
    for (const job of pending) {
      if (job.hasEndedAt(now)) back += job.data.cost;
      else still.push(job);
    }
    this.#pendingRefunds.set(account, still);
    if (back === 0) return;
    this.#balances.set(account, round((this.#balances.get(account) ?? 0) + back));
    this.#refunded += back;
  }
}

const round = (n: number): number => Math.round(n * 100) / 100;
