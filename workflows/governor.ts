// The rate governor of one API account: a long-lived workflow that owns the account's API rate.
// Every worker that calls the API reports what its calls got (reportOutcomesUpdate) about once a
// second and gets the rates in force back; the governor feeds the reports to the control law of
// each endpoint group (governor/book.ts) and sets the rates as the dispatch rates of the
// account's submit and query task queues. Its state lives in its history, so worker restarts and
// crashes lose nothing; it ends after an hour without reports and the next report starts it anew.
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { governorViewQuery, reportOutcomesUpdate, taskQueuesOf } from '../common/names.js';
import { GovernorBook, initialGovernorState } from '../governor/book.js';
import { describeGrants, reportProblem } from '../governor/describe.js';
import { FLOOR_PER_SECOND } from '../governor/rate-law.js';
import { API_GROUPS, type ApiGroup, type GovernorState } from '../governor/types.js';

export interface GovernorInput {
  /** The API account's id (common/api-account.ts): no key, no URL. None: the shared queues. */
  account?: string;
  /** Carried over by continue-as-new. */
  state?: GovernorState;
  /** Where a new governor's rates start: high for a provider that documents no rate limit. */
  startPerSecond?: number;
}

/** The governor ends after this long without a report: a later run starts it again. */
const IDLE_END_MS = 60 * 60_000;
/** Continue-as-new well before Temporal's history limits: reports cost about 5 events each. */
const HISTORY_EVENTS = 2000;
/** A queue's dispatch rate is set again when the rate in force moved by more than this share. */
const RESET_QUEUE_RATE_AT = 0.02;

const { applyGroupRates } = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
});

export async function governorWorkflow(input: GovernorInput): Promise<void> {
  const queues = taskQueuesOf(input.account);
  const book = new GovernorBook(input.state ?? initialGovernorState(Date.now(), input.startPerSecond));
  let lastReportMs = Date.now();
  let idle = false;
  let queuesSet = false;
  setHandler(
    reportOutcomesUpdate,
    async (report) => {
      lastReportMs = Date.now();
      book.report(report, lastReportMs);
      // The first answers wait for the queues' rates: a queue without one dispatches at once.
      if (!queuesSet) await condition(() => queuesSet);
      return book.grants(Date.now());
    },
    {
      validator: (report) => {
        const problem = reportProblem(report);
        if (problem) throw new Error(problem);
      },
    },
  );
  setHandler(governorViewQuery, () => book.view(input.account ?? 'shared', Date.now()));

  void (async () => {
    while (Date.now() - lastReportMs < IDLE_END_MS) await sleep(IDLE_END_MS / 6);
    idle = true;
  })();

  const queueOf: Record<ApiGroup, string> = { submit: queues.submit, query: queues.query };
  const applied: Record<ApiGroup, number> = { submit: 0, query: 0 };
  const moved = (group: ApiGroup): boolean => {
    const rate = book.grants(Date.now())[group].ratePerSecond;
    return Math.abs(rate - applied[group]) > RESET_QUEUE_RATE_AT * applied[group];
  };
  const full = (): boolean =>
    workflowInfo().continueAsNewSuggested || workflowInfo().historyLength > HISTORY_EVENTS;

  for (;;) {
    await condition(() => idle || full() || API_GROUPS.some(moved));
    if (idle || full()) break;
    const grants = book.grants(Date.now());
    const changed = API_GROUPS.filter(moved);
    await applyGroupRates({
      queues: changed.map((group) => ({
        taskQueue: queueOf[group],
        ratePerSecond: Math.max(FLOOR_PER_SECOND, grants[group].ratePerSecond),
        source: grants[group].source,
      })),
    });
    for (const group of changed) applied[group] = grants[group].ratePerSecond;
    queuesSet = true;
    setCurrentDetails(describeGrants(book.view(input.account ?? 'shared', Date.now())));
  }
  await condition(allHandlersFinished);
  if (idle) return;
  await continueAsNew<typeof governorWorkflow>({ ...input, state: book.state() });
}
