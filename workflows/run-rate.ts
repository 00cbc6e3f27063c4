// How a run's API calls are paced, set once its plan is read: a fixed rate becomes its API task
// queue's dispatch rate; a discovered rate is the account's governor's (workflows/governor.ts),
// which the run joins, starting it where the provider warrants when it is not running yet.
import type { PreparedRun, RunInput } from '../common/types.js';
import type { ActivitiesOn } from './activities.js';

export async function limitRate(
  activities: Pick<ActivitiesOn, 'joinRateGovernor' | 'configureRateLimit'>,
  run: { input: RunInput; runId: string; prepared: PreparedRun; apiQueue: string },
): Promise<void> {
  const { input, runId, prepared } = run;
  if (prepared.rateCaps !== undefined) {
    await activities.joinRateGovernor.executeWithOptions(
      { summary: "join the API account's rate governor" },
      [
        {
          ...(input.apiAccount !== undefined ? { account: input.apiAccount } : {}),
          runId,
          ...(prepared.startPerSecond ? { startPerSecond: prepared.startPerSecond } : {}),
        },
      ],
    );
    return;
  }
  await activities.configureRateLimit.executeWithOptions(
    { summary: `limit API calls to ${prepared.requestsPerSecond}/s` },
    [{ requestsPerSecond: prepared.requestsPerSecond, taskQueue: run.apiQueue }],
  );
}
