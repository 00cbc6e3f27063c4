// Where every API call waits for its turn. A run with a fixed rate (a number in `limits`) paces
// all its calls at that rate, as the server does on the account's API queue. A run whose rate is
// discovered takes the rate of the call's endpoint group from the account's governor
// (governor-link.ts), below the run's own caps, and tells the governor how the call was answered.
// Each worker paces at its share of a rate: a fixed rate over the workers polling the call's
// queue, a discovered one over the workers the governor heard calling its group lately.
// Every call's answer and the rate it went at are recorded on the worker's metrics here too.
import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { RateLimitError, ImageApiError } from '../api/index.js';
import { NO_METRICS, type WorkerMetrics } from '../metrics/worker-metrics.js';
import { FailureType } from '../common/failure-types.js';
import { accountOfQueue, runIdOfShard, taskQueuesOf } from '../common/names.js';
import type { ApiGroup, RateCaps } from '../governor/types.js';
import { ApiWorkerFleet } from './api-fleet.js';
import { CallPacer, MAX_PACER_WAIT_MS, systemPacerClock, type PacerClock } from './call-pacer.js';
import { activityContext } from './context.js';
import { GovernorLink } from './governor-link.js';

/** The rate settings of a run, as its plan has them. */
export interface RunRate {
  /** The fixed rate of every call together; with `rateCaps`, the discovered rate is used instead. */
  requestsPerSecond: number;
  /** Present when the rate is discovered (`auto`): the run's own ceilings. */
  rateCaps?: RateCaps;
  /** The run's provider, for the worker's metrics. */
  provider?: string;
}

/** Tell it how the call went: its error, or nothing when it was answered with success. */
export type Answered = (error?: unknown) => void;

/** The worker's Temporal client; none in a test's mock environment (then the starting rate holds). */
function clientOf(context: Context | undefined): Client | undefined {
  try {
    return context?.client;
  } catch {
    return undefined;
  }
}

export class RateGate {
  readonly #pacers = new Map<string, CallPacer>();
  readonly #fleets = new Map<string, ApiWorkerFleet>();
  /** By account ('' for the shared queues). */
  readonly #links = new Map<string, GovernorLink>();

  readonly #metrics: WorkerMetrics;

  constructor(
    private readonly options: {
      apiWorkers?: number;
      now: () => number;
      clock?: PacerClock;
      metrics?: WorkerMetrics;
    },
  ) {
    this.#metrics = options.metrics ?? NO_METRICS;
  }

  /** Waits for the next call of `group` for the run; call the answer back to the function it returns. */
  async acquire(group: ApiGroup, run: RunRate): Promise<Answered> {
    const context = activityContext();
    const signal = context?.cancellationSignal;
    // Calls are paced by their account's API queues, whichever queue the activity making them
    // runs on (collectResults' GETs run on the transfer queue): one pacer per rate, whatever the
    // activity. A fixed rate and a run's caps are shared by the workers polling the API queue.
    const account = accountOfQueue(context?.info.taskQueue ?? '');
    const apiQueue = taskQueuesOf(account).api;
    const pollers = async (): Promise<number> => this.options.apiWorkers ?? this.#fleet(apiQueue).size();
    if (run.rateCaps === undefined) {
      await this.#pacer(apiQueue).acquire(run.requestsPerSecond, await pollers(), signal);
      this.#metrics.rateInForce('all', run.provider, run.requestsPerSecond);
      return (error) => this.#metrics.apiCall(group, run.provider, error);
    }
    const link = this.#link(account, context?.log.warn.bind(context.log));
    const grant = await link.grant(group, clientOf(context));
    const held = grant.holdUntilMs - this.options.now();
    if (held > MAX_PACER_WAIT_MS) {
      throw ApplicationFailure.create({
        type: FailureType.RateHeld,
        message: `the provider asked for no calls until ${new Date(grant.holdUntilMs).toISOString()}`,
        nextRetryDelay: held,
        category: 'BENIGN',
      });
    }
    if (held > 0) await (this.options.clock ?? systemPacerClock).sleep(held, signal);
    // The run's ceilings first, then the account's rate: each pacer keeps its own guarantee.
    const runId = runIdOfShard(context?.info.workflowExecution?.workflowId ?? '');
    const caps = run.rateCaps;
    if (caps.all !== undefined) await this.#pacer(`${runId}|all`).acquire(caps.all, await pollers(), signal);
    const groupCap = caps[group];
    if (groupCap !== undefined)
      await this.#pacer(`${runId}|${group}`).acquire(groupCap, await pollers(), signal);
    // This worker's share, read when the call's turn comes: a 429 meanwhile slows the calls
    // already waiting too, and a worker that died stops counting within seconds.
    await this.#pacer(`${account ?? ''}|${group}|governed`).acquire(() => link.share(group), 1, signal);
    link.sent(group);
    const rateInForce = (): void =>
      this.#metrics.rateInForce(group, run.provider, link.current(group).ratePerSecond);
    rateInForce();
    return (error) => {
      this.#metrics.apiCall(group, run.provider, error);
      tellGovernor(link, group, error);
      rateInForce(); // a 429 lowers it at once
    };
  }

  close(): void {
    for (const link of this.#links.values()) link.close();
  }

  #pacer(key: string): CallPacer {
    let pacer = this.#pacers.get(key);
    if (!pacer) this.#pacers.set(key, (pacer = new CallPacer(this.options.clock ?? systemPacerClock)));
    return pacer;
  }

  #fleet(queue: string): ApiWorkerFleet {
    let fleet = this.#fleets.get(queue);
    if (!fleet) this.#fleets.set(queue, (fleet = new ApiWorkerFleet(queue, this.options.now)));
    return fleet;
  }

  #link(account: string | undefined, warn: ((message: string) => void) | undefined): GovernorLink {
    let link = this.#links.get(account ?? '');
    if (!link) this.#links.set(account ?? '', (link = new GovernorLink(account, this.options.now, warn)));
    return link;
  }
}

/** How a governed call was answered, told to the account's governor. */
function tellGovernor(link: GovernorLink, group: ApiGroup, error: unknown): void {
  if (error === undefined) return link.answered(group);
  // A 429 over a concurrency limit (BFL's active tasks) says nothing of the rate: the shard
  // lowers what it keeps in flight instead (workflows/concurrency-cap.ts).
  if (error instanceof RateLimitError && error.limit === 'rate') {
    return link.answered(group, error.retryAfterMs !== undefined ? { retryAfterMs: error.retryAfterMs } : {});
  }
  // The provider answered (a 4xx or 5xx): admitted, as far as its rate is concerned.
  if (error instanceof ImageApiError && error.httpStatus !== undefined) link.answered(group);
}
