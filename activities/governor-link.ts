// A worker's line to its account's rate governor (workflows/governor.ts). It counts what the
// worker's calls got, sends the counts about once a second (at once after a 429) as an
// update-with-start, which also starts the governor when it is not running, and keeps the rates
// the governor answers for the worker's pacers; a 429 also slows the worker's own calls at once,
// before the report is answered. When the governor cannot be reached, the counts wait for the
// next report and the last rates stay in force.
import { hostname } from 'node:os';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import { governorWorkflowId, reportOutcomesUpdate, taskQueuesOf } from '../common/names.js';
import {
  BACK_OFF,
  DEFAULT_RETRY_AFTER_MS,
  FLOOR_PER_SECOND,
  INITIAL_PER_SECOND,
  SLOW_START_GROWTH,
} from '../governor/rate-law.js';
import {
  API_GROUPS,
  type ApiGroup,
  type GovernorGrant,
  type GovernorReport,
  type GroupGrant,
  type GroupOutcomes,
} from '../governor/types.js';

/** How often a worker whose calls got answers reports them. */
export const REPORT_EVERY_MS = 1000;
/** After a 429, the report goes at once, but reports never come closer together than this. */
const URGENT_GAP_MS = 200;
/** A grant this old is renewed before a call relies on it (the worker was idle meanwhile). */
const STALE_GRANT_MS = 15_000;
/** A governor that could not be reached is asked again after this long. */
const RETRY_UNREACHABLE_MS = 5_000;
/** A governor that cannot be reached is logged at most this often. */
const WARN_EVERY_MS = 30_000;

/** What the worker uses before the governor's first answer: where the law starts. */
const STARTING_GRANT: GroupGrant = {
  ratePerSecond: INITIAL_PER_SECOND,
  holdUntilMs: 0,
  source: 'discovering',
  sinceMs: 0,
  workers: 0,
};

interface Counts extends GroupOutcomes {
  /** When the longest Retry-After among the refusals ends (epoch ms). */
  retryAfterUntil: number;
}

const zero = (): Counts => ({ attempted: 0, admitted: 0, refused: 0, retryAfterUntil: 0 });

export class GovernorLink {
  #grant: GovernorGrant | undefined;
  #grantAt = Number.NEGATIVE_INFINITY;
  #counts: Record<ApiGroup, Counts> = { submit: zero(), query: zero() };
  #client: Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #sending: Promise<void> | undefined;
  #sentAt = Number.NEGATIVE_INFINITY;
  #warnedAt = Number.NEGATIVE_INFINITY;
  readonly #backedOffUntil: Record<ApiGroup, number> = { submit: 0, query: 0 };
  /** Whether the governor's last answer counted this worker among the group's callers. */
  readonly #counted: Record<ApiGroup, boolean> = { submit: false, query: false };

  constructor(
    /** Undefined: the shared queues of runs recorded without an account (common/names.ts). */
    readonly account: string | undefined,
    private readonly now: () => number = Date.now,
    private readonly warn: (message: string) => void = () => undefined,
  ) {}

  /** The rate in force for `group`; the first call, or one after an idle spell, waits for the governor. */
  async grant(group: ApiGroup, client: Client | undefined): Promise<GroupGrant> {
    if (client) this.#client = client;
    if (this.now() - this.#grantAt > STALE_GRANT_MS) await this.#send();
    return this.current(group);
  }

  /** The rate in force for `group` now, as last answered (or backed off since). */
  current(group: ApiGroup): GroupGrant {
    return this.#grant?.[group] ?? STARTING_GRANT;
  }

  /** This worker's share of `group`'s rate now: the rate over the workers calling it, this one included. */
  share(group: ApiGroup): number {
    const grant = this.current(group);
    return usableRate(grant) / Math.max(1, grant.workers + (this.#counted[group] ? 0 : 1));
  }

  sent(group: ApiGroup): void {
    this.#counts[group].attempted++;
    this.#schedule(false);
  }

  /** A call of `group` was answered: refused (a 429, with its Retry-After when given) or not. */
  answered(group: ApiGroup, refusal?: { retryAfterMs?: number }): void {
    const counts = this.#counts[group];
    if (!refusal) {
      counts.admitted++;
      return this.#schedule(false);
    }
    counts.refused++;
    counts.retryAfterUntil = Math.max(counts.retryAfterUntil, this.now() + (refusal.retryAfterMs ?? 0));
    this.#backOff(group, refusal.retryAfterMs ?? DEFAULT_RETRY_AFTER_MS);
    this.#schedule(true);
  }

  /**
   * Slows this worker's calls of `group` at once, as the governor will when the report reaches
   * it: the calls sent meanwhile would meet the same refusal. In slow start the rate may be up
   * to a whole growth over the limit, so it falls back under the rate before that growth, as the
   * law's does. Once per Retry-After; the governor's next answer replaces it.
   */
  #backOff(group: ApiGroup, retryAfterMs: number): void {
    const grant = this.#grant?.[group];
    if (!grant || this.now() < this.#backedOffUntil[group]) return;
    this.#backedOffUntil[group] = this.now() + retryAfterMs;
    const factor = grant.source === 'discovering' ? BACK_OFF / SLOW_START_GROWTH : BACK_OFF;
    this.#grant = {
      ...this.#grant!,
      [group]: { ...grant, ratePerSecond: grant.ratePerSecond * factor, source: 'retry-after' },
    };
  }

  /** Stops the report timer (worker shutdown); counts not yet sent are dropped. */
  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(urgent: boolean): void {
    if (this.#sending) return; // the send's end schedules the next
    const delay = urgent
      ? Math.max(0, this.#sentAt + URGENT_GAP_MS - this.now())
      : Math.max(0, this.#sentAt + REPORT_EVERY_MS - this.now());
    if (this.#timer && !urgent) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#send();
    }, delay);
    this.#timer.unref();
  }

  async #send(): Promise<void> {
    this.#sending ??= this.#exchange().finally(() => {
      this.#sending = undefined;
      if (this.#pending()) this.#schedule(API_GROUPS.some((group) => this.#counts[group].refused > 0));
    });
    return this.#sending;
  }

  #pending(): boolean {
    return API_GROUPS.some((group) => this.#counts[group].attempted + this.#counts[group].refused > 0);
  }

  async #exchange(): Promise<void> {
    const client = this.#client;
    if (!client) return;
    const counts = this.#counts;
    this.#counts = { submit: zero(), query: zero() };
    this.#sentAt = this.now();
    const groups: Partial<Record<ApiGroup, GroupOutcomes>> = {};
    for (const group of API_GROUPS) {
      const { retryAfterUntil, ...outcomes } = counts[group];
      if (outcomes.attempted + outcomes.admitted + outcomes.refused === 0) continue;
      groups[group] = outcomes;
      if (outcomes.refused > 0) outcomes.retryAfterMs = Math.max(0, retryAfterUntil - this.now());
    }
    try {
      this.#grant = await reportToGovernor(client, this.account, {
        worker: client.options.identity ?? `${process.pid}@${hostname()}`,
        groups,
      });
      this.#grantAt = this.now();
      for (const group of API_GROUPS) this.#counted[group] = (groups[group]?.attempted ?? 0) > 0;
    } catch (error) {
      // Calls go on at the last rates (or the starting one) and ask again in a few seconds.
      this.#grantAt = Math.max(this.#grantAt, this.now() - STALE_GRANT_MS + RETRY_UNREACHABLE_MS);
      for (const group of API_GROUPS) {
        const kept = this.#counts[group];
        const unsent = counts[group];
        kept.attempted += unsent.attempted;
        kept.admitted += unsent.admitted;
        kept.refused += unsent.refused;
        kept.retryAfterUntil = Math.max(kept.retryAfterUntil, unsent.retryAfterUntil);
      }
      if (this.now() - this.#warnedAt >= WARN_EVERY_MS) {
        this.#warnedAt = this.now();
        this.warn(
          `cannot reach the rate governor ${governorWorkflowId(this.account)} (the last rates stay in force): ${String(error)}`,
        );
      }
    }
  }
}

/**
 * Sends `report` to the account's governor, starting the governor when it is not running, and
 * returns the rates in force. The governor answers once it has set its queues' rates.
 */
export function reportToGovernor(
  client: Client,
  account: string | undefined,
  report: GovernorReport,
  /** Where a governor started by this report starts its rates (rate-law.ts, UNRATED_START_PER_SECOND). */
  startPerSecond?: number,
): Promise<GovernorGrant> {
  return client.workflow.executeUpdateWithStart(reportOutcomesUpdate, {
    args: [report],
    startWorkflowOperation: new WithStartWorkflowOperation('governorWorkflow', {
      workflowId: governorWorkflowId(account),
      taskQueue: taskQueuesOf(account).workflow,
      args: [
        {
          ...(account !== undefined ? { account } : {}),
          ...(startPerSecond !== undefined ? { startPerSecond } : {}),
        },
      ],
      workflowIdConflictPolicy: 'USE_EXISTING',
    }),
  });
}

/** The least a grant can be: what a worker falls back on for a nonsense answer. */
function usableRate(grant: GroupGrant): number {
  return Number.isFinite(grant.ratePerSecond)
    ? Math.max(FLOOR_PER_SECOND, grant.ratePerSecond)
    : FLOOR_PER_SECOND;
}
