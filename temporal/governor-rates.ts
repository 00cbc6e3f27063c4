// The rates in force for a run, asked of its account's governor (workflows/governor.ts): for the
// CLI's display and `status`, and for summary.json. A governor that does not answer in time (no
// worker polls the account's queue) leaves the rates unknown rather than holding the caller.
import type { Client } from '@temporalio/client';
import { governorViewQuery, governorWorkflowId } from '../common/names.js';
import { runRates } from '../governor/describe.js';
import type { RateCaps, RunRates } from '../governor/types.js';

const ANSWER_WITHIN_MS = 3_000;

/** A fixed-rate run's rate, or a governed run's rates from its governor; undefined when it does not answer. */
export async function ratesInForce(
  client: Client,
  run: { apiAccount?: string; requestsPerSecond: number; rateCaps?: RateCaps },
): Promise<RunRates | undefined> {
  if (run.rateCaps === undefined) return { mode: 'fixed', requestsPerSecond: run.requestsPerSecond };
  const caps = run.rateCaps;
  try {
    const view = await client.withDeadline(Date.now() + ANSWER_WITHIN_MS, () =>
      client.workflow.getHandle(governorWorkflowId(run.apiAccount)).query(governorViewQuery),
    );
    return runRates(view, caps, Date.now());
  } catch {
    return undefined;
  }
}
