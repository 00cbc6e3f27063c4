// The run workflow: one per manifest run; shards the items into child workflows.
import {
  CancellationScope,
  condition,
  continueAsNew,
  isCancellation,
  setCurrentDetails,
  setHandler,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import {
  cancelSignal,
  governorWorkflowId,
  pauseSignal,
  resumeSignal,
  runProgressQuery,
  shardFinishedSignal,
  shardProgressSignal,
  shardSubmittedSignal,
  shardWorkflowId,
  taskQueuesOf,
} from '../common/names.js';
import type { PauseRequest, PreparedRun, RunInput, RunResult, RunState, ShardSpec } from '../common/types.js';
import { countAttributes, ITEMS_ATTRIBUTE, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import { activitiesOn } from './activities.js';
import { CarryOver } from './run-carry.js';
import { pacingOf, runDetails } from './run-details.js';
import { limitRate } from './run-rate.js';
import { writeRunReport } from './run-report.js';
import {
  concurrentShards,
  generatedItems,
  generationShards,
  shardInput,
  shardPresentation,
} from './run-shards.js';
import { RunTotals } from './run-totals.js';
import { notifiedRun, RunNotifier } from './run-notify.js';
import type { NotifiedRun } from '../common/notify-types.js';
import { ShardPool } from './run-shard-pool.js';

/**
 * Continue as new past this many events, far below Temporal's 10,240-event warning: the history
 * grows by about 18 events per shard (start, handoff, tail, share raises, result).
 */
export const RUN_HISTORY_LIMIT = 4_000;

/**
 * A catalog run. Durable because it holds only references and totals: the manifest is frozen into
 * a plan file by an activity, items are worked on by shard workflows (each under Temporal's
 * history limits), and per-item outcomes go to files. Its own history grows with the number of
 * shards, so past RUN_HISTORY_LIMIT it continues as new, carrying its totals and the shards it
 * has running. That is why shards outlive an execution (ParentClosePolicy.ABANDON) and tell
 * their results by signal: a new execution cannot await an earlier one's children.
 */
export async function runWorkflow(input: RunInput): Promise<RunResult> {
  const { workflowId: runId } = workflowInfo();
  const { carried } = input;
  const queues = taskQueuesOf(input.apiAccount);
  const activities = activitiesOn(queues);
  const notifier = input.notify?.length ? new RunNotifier(input.notify, queues.workflow) : undefined;
  const startedAt = carried?.startedAt ?? workflowInfo().startTime.toISOString();
  let state: RunState = carried?.state ?? 'preparing';
  let reason = carried?.reason;
  let paused = carried?.paused ?? false;
  let cancelled = carried?.cancelled ?? false;
  /** Set once the plan exists (with the deadline as a moment); the progress query reads it before that too. */
  let prepared: PreparedRun | undefined = carried?.prepared;
  let deadlineAt = carried?.deadlineAt;
  let totals = carried ? RunTotals.restore(carried.totals) : new RunTotals(undefined);
  /** Every shard of the run, started or not (more come when carried items must be generated). */
  const shards: ShardSpec[] = [];
  const shardPool = new ShardPool(carried);
  const notified = (): NotifiedRun => notifiedRun(runId, prepared, input.schedule, reason);
  setHandler(pauseSignal, (request?: PauseRequest) => {
    paused = true;
    reason = request?.reason ?? 'paused by the operator';
    if (state === 'running') state = 'paused';
    shardPool.forward(pauseSignal);
    // Only shards give a reason: the API refused the account, and a person must act.
    if (request?.reason !== undefined) notifier?.paused(notified());
  });
  setHandler(resumeSignal, () => {
    paused = false;
    notifier?.resumed();
    reason = undefined;
    if (state === 'paused') state = 'running';
    shardPool.forward(resumeSignal);
  });
  setHandler(cancelSignal, () => {
    cancelled = true;
    if (state === 'running' || state === 'paused') state = 'cancelling';
    shardPool.forward(cancelSignal);
  });
  setHandler(runProgressQuery, () => ({
    runId,
    name: prepared?.name ?? '',
    state,
    emulated: input.emulated,
    ...(reason ? { reason } : {}),
    itemCount: prepared?.itemCount ?? 0,
    shardCount: shards.length,
    finished: totals.snapshot(),
    runningShards: [...shardPool.running.keys()],
    ...(prepared?.budgetCredits !== undefined ? { budgetCredits: prepared.budgetCredits } : {}),
    requestsPerSecond: prepared?.requestsPerSecond ?? 0,
    ...(prepared?.rateCaps !== undefined ? { rateCaps: prepared.rateCaps } : {}),
    ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount } : {}),
    ...(deadlineAt !== undefined ? { deadlineAt } : {}),
    ...(totals.carryOver ? { carryOver: { ...totals.carryOver } } : {}),
    ...(prepared?.submission ? { submission: prepared.submission } : {}),
  }));

  const plan: PreparedRun = prepared ?? (await prepareAndLimit());
  async function prepareAndLimit(): Promise<PreparedRun> {
    const ready = await activities.prepareRun.executeWithOptions(
      { summary: "read the run's plan and check its output" },
      [{ plan: input.plan }],
    );
    prepared = ready;
    totals = new RunTotals(ready.budgetCredits);
    if (ready.deadline)
      deadlineAt =
        'atMs' in ready.deadline ? ready.deadline.atMs : Date.parse(startedAt) + ready.deadline.afterMs;
    await limitRate(activities, { input, runId, prepared: ready, apiQueue: queues.api });
    return ready;
  }
  shards.push(...generationShards(plan));
  const carry = new CarryOver(plan, shards.length, carried?.carry);
  if (carry.progress.done) shards.push(...carry.regenerationShards());
  // Search attributes only when the starter registered them (common/search-attributes.ts); one
  // upsert per finished shard keeps the history at a handful of events per shard.
  const manifestName = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE);
  let started = carried?.started ?? 0;
  /** No shard is left to start: none waits, and no carried item can still turn out to need one. */
  const allStarted = (): boolean => started === shards.length && !carry.carrying;
  const publish = (final?: { counts: RunResult['counts']; credits: number }): void => {
    const { counts, credits, tasksRejected, batches } = { ...totals.sofar(), ...final };
    setCurrentDetails(
      runDetails({
        state,
        itemCount: plan.itemCount,
        counts,
        credits,
        shardCount: shards.length,
        started,
        running: shardPool.running.size,
        tasksRejected,
        carryOver: totals.carryOver,
        deadlineAt,
        endedByDeadline: totals.endedByDeadline,
        rate: pacingOf(plan, governorWorkflowId(input.apiAccount), batches),
      }),
    );
  };
  /** The search attributes: once per finished shard, so a few events per shard at most. */
  const indexCounts = (counts = totals.finished.counts, credits = totals.finished.creditsSpent): void => {
    if (manifestName === undefined) return;
    upsertSearchAttributes([
      { key: ITEMS_ATTRIBUTE, value: plan.itemCount },
      ...countAttributes(counts, credits),
    ]);
  };
  const parallel = carried?.parallel ?? concurrentShards(Math.max(1, shards.length), plan);
  const perShardInFlight = Math.max(1, Math.ceil(plan.maxInFlight / parallel));
  shardPool.limit(plan.maxInFlight, perShardInFlight);
  shardPool.onClosed = (index, result, allowance) => {
    totals.shardFinished(index, result, allowance);
    // The UI's memo of a batch run: its ended batches, one event per finished shard.
    if (result.batches) upsertMemo({ batches: totals.finished.batches });
    if (result.stopReason && !reason) reason = result.stopReason;
    publish();
    indexCounts();
    shardPool.raise(allStarted());
  };
  // Registered once publish can run: an execution carried over finds shards' signals waiting.
  setHandler(shardProgressSignal, (progress) => {
    // A signal the server delivers after the shard's result is already counted in `finished`.
    if (!shardPool.running.has(shardWorkflowId(runId, progress.shard))) return;
    totals.told(progress);
    publish();
  });
  publish();
  indexCounts();
  if (state === 'preparing') state = paused ? 'paused' : 'running';
  setHandler(shardSubmittedSignal, ({ workflowId, holding, ...learned }) => {
    shardPool.shares.handOff(workflowId, holding);
    totals.learn(learned);
    shardPool.raise(allStarted());
  });
  setHandler(shardFinishedSignal, (result) => shardPool.closed(shardWorkflowId(runId, result.shard), result));

  const historyLimit = input.tuning?.runHistoryLimit ?? RUN_HISTORY_LIMIT;
  const historyFull = (): boolean =>
    workflowInfo().historyLength > historyLimit || workflowInfo().continueAsNewSuggested;
  /** Set before continue-as-new: the carry-over starts no more ranges. */
  let draining = false;
  if (carry.carrying && !carried) totals.startCarryOver(plan.itemCount - generatedItems(plan));
  void carry
    .run(activities, plan, totals, () => cancelled || draining, publish)
    .then((more) => {
      shards.push(...more);
      shardPool.raise(allStarted());
    });
  const failed = (): boolean => shardPool.failure !== undefined;
  const allClosed = (): boolean =>
    shardPool.running.size === 0 && !carry.working && (allStarted() || cancelled);
  /** Why this execution starts no more shards: nothing left, cancelled, failed, or its history is full. */
  const startsNoMore = (): boolean => cancelled || allStarted() || failed() || historyFull();
  try {
    while (!cancelled) {
      await condition(() => startsNoMore() || (started < shards.length && shardPool.canStart(parallel)));
      if (startsNoMore()) break;
      await startShard(shards[started]!);
    }
    await condition(() => failed() || allClosed() || historyFull());
  } catch (error) {
    if (isCancellation(error)) await CancellationScope.nonCancellable(() => shardPool.cancelAll());
    throw error;
  }
  if (shardPool.failure) return await failWithShards(shardPool.failure);
  if (!allClosed()) return await continueAsNewQuietly();

  async function startShard(spec: ShardSpec): Promise<void> {
    const allowance = totals.allocate(plan.shardCredits?.[spec.index]);
    await shardPool.start(shardWorkflowId(runId, spec.index), spec.index, allowance, {
      taskQueue: queues.workflow,
      args: (maxInFlight) =>
        shardInput({
          input,
          plan,
          runId,
          fairnessKey: workflowInfo().firstExecutionRunId,
          shard: spec,
          parallel,
          maxInFlight,
          allowance,
          deadlineAt,
          learnedPollMs: totals.learnedPollMs,
          learnedGenerationMs: totals.learnedGenerationMs,
          learnedSlots: totals.learnedSlots,
          paused,
          cancelled,
        }),
      presentation: (args) => shardPresentation(args.shard, shards.length, plan, manifestName),
    });
    started++;
    shardPool.raise(allStarted());
  }

  /** A shard failed: so does the run, and its other shards are asked to stop. */
  async function failWithShards(error: Error): Promise<never> {
    await shardPool.cancelAll();
    await notifier?.failed(notified(), error);
    throw error;
  }

  /**
   * Continues as new once nothing of this execution is in flight but its shards: no carried range
   * being checked, every signal to a shard recorded (a signal still pending when it closes could be
   * lost). The shards go on and tell the next execution.
   */
  async function continueAsNewQuietly(): Promise<never> {
    draining = true;
    await condition(
      () => failed() || (!carry.working && shardPool.signalsInFlight === 0 && (notifier?.idle ?? true)),
    );
    if (shardPool.failure) return await failWithShards(shardPool.failure);
    return continueAsNew<typeof runWorkflow>({
      ...input,
      carried: {
        prepared: plan,
        startedAt,
        ...(deadlineAt !== undefined ? { deadlineAt } : {}),
        state,
        ...(reason !== undefined ? { reason } : {}),
        paused,
        cancelled,
        totals: totals.state(),
        parallel,
        started,
        ...shardPool.state(),
        ...(carry.ranges.length > 0 ? { carry: carry.progress } : {}),
      },
    });
  }

  state = 'reporting';
  const result = await writeRunReport(activities, { input, plan, runId, startedAt, totals });
  await notifier?.ended(result, notified(), plan.plan.objectStore);
  state = 'finished';
  publish({ counts: result.counts, credits: result.creditsSpent });
  indexCounts(result.counts, result.creditsSpent);
  return result;
}
