// The run workflow: one per manifest run; shards the items into child workflows.
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  patched,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  type ChildWorkflowHandle,
  type ExternalWorkflowHandle,
} from '@temporalio/workflow';
import {
  cancelSignal,
  governorWorkflowId,
  inFlightShareSignal,
  pauseSignal,
  resumeSignal,
  runProgressQuery,
  shardFinishedSignal,
  shardProgressSignal,
  shardSubmittedSignal,
  shardWorkflowId,
  taskQueuesOf,
} from '../common/names.js';
import type {
  ItemCounts,
  PauseRequest,
  PreparedRun,
  RunInput,
  RunProgress,
  RunResult,
  RunState,
  ShardResult,
  ShardSpec,
} from '../common/types.js';
import { countAttributes, ITEMS_ATTRIBUTE, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import { activitiesOn } from './activities.js';
import { InFlightShares } from './in-flight-shares.js';
import {
  carryOverRanges,
  concurrentShards,
  generatedItems,
  generationShards,
  regenerationShards,
  shardInput,
  shardPresentation,
} from './run-shards.js';
import { RunTotals } from './run-totals.js';
import { shardWorkflow } from './shard.js';
import { describeOutcome } from '../common/item-counts.js';
import { plural } from '../common/words.js';

/** carryOver activities at once: each checks a shard's worth of carried items. */
const CARRY_OVER_LANES = 4;
/**
 * Continue as new past this many events, far below Temporal's 10,240-event warning: the history
 * grows by about 18 events per shard (start, handoff, tail, share raises, result).
 */
export const RUN_HISTORY_LIMIT = 4_000;
/** Runs started before shards told their results replay as they ran: children awaited, one execution. */
const CONTINUE_AS_NEW_PATCH = 'run-continue-as-new';

type ShardSignalTarget = Pick<ExternalWorkflowHandle, 'signal'>;

/** A started shard: its handle if this execution started it, and the budget it was given. */
interface RunningShard {
  index: number;
  allowance: number | undefined;
  child?: ChildWorkflowHandle<typeof shardWorkflow>;
}

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
  const reportsBySignal = patched(CONTINUE_AS_NEW_PATCH);
  const queues = taskQueuesOf(input.apiAccount);
  const { carryOver, configureRateLimit, joinRateGovernor, prepareRun, writeReport } = activitiesOn(queues);
  const startedAt = carried?.startedAt ?? workflowInfo().startTime.toISOString();
  let state: RunState = carried?.state ?? 'preparing';
  let reason = carried?.reason;
  let paused = carried?.paused ?? false;
  let cancelled = carried?.cancelled ?? false;
  /** Set once the plan exists (with the deadline as a moment); the progress query reads it before that too. */
  const known: { prepared?: PreparedRun; deadlineAt?: number } = carried
    ? {
        prepared: carried.prepared,
        ...(carried.deadlineAt !== undefined ? { deadlineAt: carried.deadlineAt } : {}),
      }
    : {};
  let totals = carried ? RunTotals.restore(carried.totals) : new RunTotals(undefined);
  const running = new Map<string, RunningShard>(
    (carried?.running ?? []).map(({ workflowId, index, allowance }) => [workflowId, { index, allowance }]),
  );
  /** Every shard of the run, started or not (more come when carried items must be generated). */
  const shards: ShardSpec[] = [];
  /** Signals to shards not yet recorded: continue-as-new waits for them. */
  let signalsInFlight = 0;
  /** A shard's failure, which fails the run (as a failed child did before shards told results). */
  let failure: Error | undefined;

  /** A signal to a running shard; one that closes before it lands needs it no more. */
  const signalShard = (workflowId: string, send: (shard: ShardSignalTarget) => Promise<void>): void => {
    const shard = running.get(workflowId);
    if (!shard) return;
    signalsInFlight++;
    void send(shard.child ?? getExternalWorkflowHandle(workflowId))
      .catch(() => undefined)
      .finally(() => void signalsInFlight--);
  };
  const forward = (signal: typeof pauseSignal | typeof resumeSignal | typeof cancelSignal): void => {
    for (const workflowId of running.keys()) signalShard(workflowId, (shard) => shard.signal(signal));
  };
  setHandler(pauseSignal, (request?: PauseRequest) => {
    paused = true;
    reason = request?.reason ?? 'paused by the operator';
    if (state === 'running') state = 'paused';
    forward(pauseSignal);
  });
  setHandler(resumeSignal, () => {
    paused = false;
    reason = undefined;
    if (state === 'paused') state = 'running';
    forward(resumeSignal);
  });
  setHandler(cancelSignal, () => {
    cancelled = true;
    if (state === 'running' || state === 'paused') state = 'cancelling';
    forward(cancelSignal);
  });
  setHandler(runProgressQuery, (): RunProgress => {
    const { prepared } = known;
    return {
      runId,
      name: prepared?.name ?? '',
      state,
      emulated: input.emulated,
      ...(reason ? { reason } : {}),
      itemCount: prepared?.itemCount ?? 0,
      shardCount: shards.length,
      finished: totals.snapshot(),
      runningShards: [...running.keys()],
      ...(prepared?.budgetCredits !== undefined ? { budgetCredits: prepared.budgetCredits } : {}),
      requestsPerSecond: prepared?.requestsPerSecond ?? 0,
      ...(prepared?.rateCaps !== undefined ? { rateCaps: prepared.rateCaps } : {}),
      ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount } : {}),
      ...(known.deadlineAt !== undefined ? { deadlineAt: known.deadlineAt } : {}),
      ...(totals.carryOver ? { carryOver: { ...totals.carryOver } } : {}),
    };
  });

  const plan = carried?.prepared ?? (await prepareAndLimit());
  const { deadlineAt } = known;
  async function prepareAndLimit(): Promise<PreparedRun> {
    const prepared = await prepareRun.executeWithOptions(
      { summary: "read the run's plan and check its output" },
      [{ plan: input.plan }],
    );
    known.prepared = prepared;
    totals = new RunTotals(prepared.budgetCredits);
    if (prepared.deadline) {
      known.deadlineAt =
        'atMs' in prepared.deadline
          ? prepared.deadline.atMs
          : Date.parse(startedAt) + prepared.deadline.afterMs;
    }
    // A discovered rate is the account's governor's to set (workflows/governor.ts).
    if (prepared.rateCaps !== undefined) {
      await joinRateGovernor.executeWithOptions({ summary: "join the API account's rate governor" }, [
        { ...(input.apiAccount !== undefined ? { account: input.apiAccount } : {}), runId },
      ]);
    } else {
      await configureRateLimit.executeWithOptions(
        { summary: `limit API calls to ${prepared.requestsPerSecond}/s` },
        [{ requestsPerSecond: prepared.requestsPerSecond, taskQueue: queues.api }],
      );
    }
    return prepared;
  }
  shards.push(...generationShards(plan));
  const carry = carryOverRanges(plan);
  const carryProgress = carried?.carry ?? { next: 0, done: carry.length === 0, regenerate: [] };
  /** The shard number after the carried ranges': where shards of items generated after all start. */
  const regenerationFirstIndex = (carry.at(-1)?.shard ?? shards.length - 1) + 1;
  if (carryProgress.done)
    shards.push(...regenerationShards(carryProgress.regenerate, regenerationFirstIndex));
  let carrying = !carryProgress.done;
  // Search attributes only when the starter registered them (common/search-attributes.ts); one
  // upsert per finished shard keeps the history at a handful of events per shard.
  const manifestName = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE);
  let started = carried?.started ?? 0;
  /** No shard is left to start: none waits, and no carried item can still turn out to need one. */
  const allStarted = (): boolean => started === shards.length && !carrying;
  const rate =
    plan.rateCaps === undefined
      ? ` API rate: ${plan.requestsPerSecond}/s (fixed).`
      : ` API rate: discovered by ${governorWorkflowId(input.apiAccount)}, whose details show the rates in force.`;
  function publish(final?: { counts: ItemCounts; credits: number }): void {
    const { counts, credits } = final ?? totals.sofar();
    const { tasksRejected } = totals.sofar();
    const rejected = tasksRejected
      ? ` The checks rejected the images of ${plural(tasksRejected, 'task')}, whose items were generated again.`
      : '';
    const done = started - running.size;
    const shardCount = shards.length;
    const deadline =
      deadlineAt === undefined
        ? ''
        : state === 'finished' && totals.endedByDeadline > 0
          ? ` The deadline ended it with ${plural(totals.endedByDeadline, 'item')} unfinished.`
          : ` Deadline ${new Date(deadlineAt).toISOString()}.`;
    setCurrentDetails(
      (state === 'finished'
        ? `Finished: ${describeOutcome(counts, plan.itemCount, credits)}.`
        : `${done} of ${plural(shardCount, 'shard')} finished, ${running.size} running: ${counts.completed} of ` +
          `${plural(plan.itemCount, 'item')} completed, ${counts.failed} failed so far; ${plural(credits, 'credit')}.`) +
        reuse() +
        rejected +
        deadline +
        rate,
    );
  }
  /** The search attributes: once per finished shard, so a few events per shard at most. */
  const indexCounts = (counts = totals.finished.counts, credits = totals.finished.creditsSpent): void => {
    if (manifestName === undefined) return;
    upsertSearchAttributes([
      { key: ITEMS_ATTRIBUTE, value: plan.itemCount },
      ...countAttributes(counts, credits),
    ]);
  };
  function reuse(): string {
    const carriedOver = totals.carryOver;
    if (!carriedOver) return '';
    const { reused, restored, moved, regenerated } = carriedOver;
    return ` Carried over from the catalog: ${reused} of ${plural(carriedOver.items, 'item')} (${restored} fetched again, ${moved} copied to new paths, ${regenerated} generated after all).`;
  }
  // Registered once publish can run: an execution carried over finds shards' signals waiting.
  setHandler(shardProgressSignal, (progress) => {
    // A signal the server delivers after the shard's result is already counted in `finished`.
    if (!running.has(shardWorkflowId(runId, progress.shard))) return;
    totals.told(progress);
    publish();
  });
  publish();
  indexCounts();
  const parallel = carried?.parallel ?? concurrentShards(Math.max(1, shards.length), plan.maxInFlight);
  const perShardInFlight = Math.max(1, Math.ceil(plan.maxInFlight / parallel));
  if (state === 'preparing') state = paused ? 'paused' : 'running';

  const shares = new InFlightShares(plan.maxInFlight, perShardInFlight, carried?.shares);
  const raiseShares = (): void => {
    const reachable = (workflowId: string): boolean => running.has(workflowId);
    for (const [workflowId, share] of shares.raise(allStarted(), reachable))
      signalShard(workflowId, (shard) => shard.signal(inFlightShareSignal, share));
  };
  setHandler(shardSubmittedSignal, ({ workflowId, holding, generationMs }) => {
    shares.handOff(workflowId, holding);
    if (generationMs) totals.learnedGenerationMs = generationMs;
    raiseShares();
  });
  const canStartShard = (): boolean => shares.submitting < parallel && shares.free() > 0;

  /** A shard's result, by its signal or its child's completion, whichever comes first. */
  function shardClosed(workflowId: string, result: ShardResult): void {
    const shard = running.get(workflowId);
    if (!shard) return;
    running.delete(workflowId);
    if (result.failure !== undefined) {
      failure ??= ApplicationFailure.nonRetryable(result.failure, 'ShardFailed');
      return;
    }
    totals.shardFinished(shard.index, result, shard.allowance);
    if (result.stopReason && !reason) reason = result.stopReason;
    publish();
    indexCounts();
    shares.close(workflowId);
    raiseShares();
  }
  setHandler(shardFinishedSignal, (result) => shardClosed(shardWorkflowId(runId, result.shard), result));

  const historyLimit = input.tuning?.runHistoryLimit ?? RUN_HISTORY_LIMIT;
  const historyFull = (): boolean => {
    if (!reportsBySignal) return false;
    const info = workflowInfo();
    return info.historyLength > historyLimit || info.continueAsNewSuggested;
  };
  /** Carried items still being checked (carryAll). */
  let carryWorking = carrying;
  /** Set before continue-as-new: carryAll starts no more ranges. */
  let draining = false;
  const carryDone = carryAll().finally(() => void (carryWorking = false));
  const shardsDone: Promise<void>[] = [carryDone];
  const allClosed = (): boolean => running.size === 0 && !carryWorking && (allStarted() || cancelled);
  /** Why this execution starts no more shards: nothing left, cancelled, failed, or its history is full. */
  const startsNoMore = (): boolean => cancelled || allStarted() || failure !== undefined || historyFull();
  try {
    while (!cancelled) {
      await condition(() => startsNoMore() || (started < shards.length && canStartShard()));
      if (startsNoMore()) break;
      await startShard(shards[started]!);
    }
    if (reportsBySignal) await condition(() => failure !== undefined || allClosed() || historyFull());
    else await Promise.all(shardsDone);
  } catch (error) {
    if (reportsBySignal && isCancellation(error)) await CancellationScope.nonCancellable(cancelRunningShards);
    throw error;
  }
  if (failure) return await failWithShards(failure);
  if (reportsBySignal && !allClosed()) return await continueAsNewQuietly();

  async function startShard(spec: ShardSpec): Promise<void> {
    const { index } = spec;
    const allowance = totals.allocate(plan.shardCredits?.[index]);
    const workflowId = shardWorkflowId(runId, index);
    const args = shardInput({
      input,
      plan,
      runId,
      fairnessKey: workflowInfo().firstExecutionRunId,
      shard: spec,
      parallel,
      maxInFlight: shares.start(workflowId),
      allowance,
      deadlineAt,
      learnedPollMs: totals.learnedPollMs,
      learnedGenerationMs: totals.learnedGenerationMs,
      paused,
      cancelled,
      reportResult: reportsBySignal,
    });
    const child = await startChild(shardWorkflow, {
      workflowId,
      taskQueue: queues.workflow,
      // A shard outlives the execution that started it when the run continues as new.
      parentClosePolicy: reportsBySignal ? ParentClosePolicy.ABANDON : ParentClosePolicy.REQUEST_CANCEL,
      ...shardPresentation(args.shard, shards.length, plan, manifestName),
      args: [args],
    });
    running.set(workflowId, { index, allowance, child });
    started++;
    raiseShares();
    const closed = child.result().then((result) => shardClosed(workflowId, result));
    if (reportsBySignal) void closed.catch((error: Error) => void (failure ??= error));
    else shardsDone.push(closed);
  }

  /** A shard failed: so does the run, and its other shards are asked to stop, as its children were. */
  async function failWithShards(error: Error): Promise<never> {
    await cancelRunningShards();
    throw error;
  }

  /**
   * A run that ends in failure or is cancelled from outside asks its shards to cancel: they
   * outlive it (ParentClosePolicy.ABANDON), and those an earlier execution started are no
   * children of this one.
   */
  async function cancelRunningShards(): Promise<void> {
    const cancel = (workflowId: string) =>
      getExternalWorkflowHandle(workflowId)
        .cancel()
        .catch(() => undefined);
    await Promise.all([...running.keys()].map(cancel));
  }

  /**
   * The carried items, a few ranges at a time (each a carryOver activity); those whose results
   * could not be had any more become shards of their own, after the others.
   */
  async function carryAll(): Promise<void> {
    if (!carrying) return;
    if (!carried) totals.startCarryOver(plan.itemCount - generatedItems(plan));
    const lane = async (): Promise<void> => {
      while (carryProgress.next < carry.length && !cancelled && !draining) {
        const range = carry[carryProgress.next++]!;
        const summary = `carry over items[${range.offset}..${range.offset + range.count - 1}]`;
        const result = await carryOver.executeWithOptions({ summary }, [{ plan: plan.plan, ...range }]);
        totals.carried(result);
        carryProgress.regenerate.push(...result.regenerate);
        publish();
      }
    };
    await Promise.all(Array.from({ length: Math.min(CARRY_OVER_LANES, carry.length) }, lane));
    if (draining && !cancelled && carryProgress.next < carry.length) return; // the next execution goes on
    shards.push(...regenerationShards(carryProgress.regenerate, regenerationFirstIndex));
    carryProgress.done = true;
    carrying = false;
    raiseShares();
  }

  /**
   * Continues as new once nothing of this execution is in flight but its shards: no carried range
   * being checked, every signal to a shard recorded (a signal still pending when it closes could be
   * lost). The shards go on and tell the next execution.
   */
  async function continueAsNewQuietly(): Promise<never> {
    draining = true;
    await condition(() => failure !== undefined || (!carryWorking && signalsInFlight === 0));
    if (failure) return await failWithShards(failure);
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
        running: [...running].map(([workflowId, { index, allowance }]) => ({
          workflowId,
          index,
          ...(allowance !== undefined ? { allowance } : {}),
        })),
        shares: shares.state(),
        ...(carry.length > 0 ? { carry: carryProgress } : {}),
      },
    });
  }

  state = 'reporting';
  const report = await writeReport.executeWithOptions({ summary: 'write report.jsonl and summary.json' }, [
    {
      plan: plan.plan,
      runId,
      execution: workflowInfo().runId,
      emulated: input.emulated,
      startedAt,
      apiCalls: totals.finished.apiCalls,
      ...(totals.finished.tasksGivenUp > 0 ? { tasksGivenUp: totals.finished.tasksGivenUp } : {}),
      ...(totals.finished.tasksRejected > 0
        ? { tasksRejected: totals.finished.tasksRejected, creditsRejected: totals.finished.creditsRejected }
        : {}),
      ...(totals.learnedGenerationMs?.length ? { generationMs: median(totals.learnedGenerationMs) } : {}),
      ...(totals.carryOver ? { carryOver: totals.carryOver } : {}),
    },
  ]);
  state = 'finished';
  publish({ counts: report.counts, credits: report.creditsSpent });
  indexCounts(report.counts, report.creditsSpent);
  return {
    outcome: describeOutcome(report.counts, plan.itemCount, report.creditsSpent),
    name: plan.name,
    counts: report.counts,
    images: report.images,
    creditsSpent: report.creditsSpent,
    apiCalls: totals.finished.apiCalls,
    reportFile: report.reportFile,
    summaryFile: report.summaryFile,
    ...(report.galleryFile !== undefined ? { galleryFile: report.galleryFile } : {}),
    ...(report.notCompleted?.length ? { notCompleted: report.notCompleted } : {}),
    stateDir: plan.plan.stateDir,
    ...(totals.endedByDeadline > 0 ? { endedByDeadline: totals.endedByDeadline } : {}),
    ...(totals.carryOver ? { carryOver: totals.carryOver } : {}),
  };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
