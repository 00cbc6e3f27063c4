// The run workflow: one per manifest run; shards the items into child workflows.
import {
  condition,
  ParentClosePolicy,
  setCurrentDetails,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
  type ChildWorkflowHandle,
} from '@temporalio/workflow';
import {
  cancelSignal,
  governorWorkflowId,
  inFlightShareSignal,
  pauseSignal,
  resumeSignal,
  runProgressQuery,
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
 * A catalog run. Durable because it holds only references and totals: the manifest is frozen into
 * a plan file by an activity, items are worked on by shard workflows (each under Temporal's
 * history limits), and per-item outcomes go to files. Its history grows by about 22 events per
 * shard (start, handoff, share raises, close; measured at 10,000 items), so 100,000 items (200
 * shards) take under half of Temporal's 10,240-event warning without continue-as-new.
 */
export async function runWorkflow(input: RunInput): Promise<RunResult> {
  const { workflowId: runId, startTime } = workflowInfo();
  const queues = taskQueuesOf(input.apiAccount);
  const { carryOver, configureRateLimit, joinRateGovernor, prepareRun, writeReport } = activitiesOn(queues);
  let state: RunState = 'preparing';
  let reason: string | undefined;
  let paused = false;
  let cancelled = false;
  /** Set once the plan exists (with the deadline as a moment); the progress query reads it before that too. */
  const known: { prepared?: PreparedRun; deadlineAt?: number } = {};
  let totals = new RunTotals(undefined);
  const running = new Map<string, ChildWorkflowHandle<typeof shardWorkflow>>();
  /** Every shard of the run, started or not (more come when carried items must be generated). */
  const shards: ShardSpec[] = [];

  const forward = (signal: typeof pauseSignal | typeof resumeSignal | typeof cancelSignal): void => {
    // A shard that closes before the signal lands needs it no more.
    for (const child of running.values()) void child.signal(signal).catch(() => undefined);
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

  const plan = await prepareRun.executeWithOptions({ summary: "read the run's plan and check its output" }, [
    { plan: input.plan },
  ]);
  known.prepared = plan;
  totals = new RunTotals(plan.budgetCredits);
  if (plan.deadline) {
    known.deadlineAt =
      'atMs' in plan.deadline ? plan.deadline.atMs : startTime.getTime() + plan.deadline.afterMs;
  }
  const { deadlineAt } = known;
  // A discovered rate is the account's governor's to set (workflows/governor.ts).
  if (plan.rateCaps !== undefined) {
    await joinRateGovernor.executeWithOptions({ summary: "join the API account's rate governor" }, [
      { ...(input.apiAccount !== undefined ? { account: input.apiAccount } : {}), runId },
    ]);
  } else {
    await configureRateLimit.executeWithOptions(
      { summary: `limit API calls to ${plan.requestsPerSecond}/s` },
      [{ requestsPerSecond: plan.requestsPerSecond, taskQueue: queues.api }],
    );
  }
  shards.push(...generationShards(plan));
  const carry = carryOverRanges(plan);
  let carrying = carry.length > 0;
  // Search attributes only when the starter registered them (common/search-attributes.ts); one
  // upsert per finished shard keeps the history at a handful of events per shard.
  const manifestName = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE);
  let started = 0;
  /** No shard is left to start: none waits, and no carried item can still turn out to need one. */
  const allStarted = (): boolean => started === shards.length && !carrying;
  setHandler(shardProgressSignal, (progress) => {
    // A signal the server delivers after the shard's result is already counted in `finished`.
    if (!running.has(shardWorkflowId(runId, progress.shard))) return;
    totals.told(progress);
    publish();
  });
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
  const reuse = (): string => {
    const carried = totals.carryOver;
    if (!carried) return '';
    const { reused, restored, moved, regenerated } = carried;
    return ` Carried over from the catalog: ${reused} of ${plural(carried.items, 'item')} (${restored} fetched again, ${moved} copied to new paths, ${regenerated} generated after all).`;
  };
  publish();
  indexCounts();
  const parallel = concurrentShards(Math.max(1, shards.length), plan.maxInFlight);
  const perShardInFlight = Math.max(1, Math.ceil(plan.maxInFlight / parallel));
  if (state === 'preparing') state = paused ? 'paused' : 'running';

  const shares = new InFlightShares(plan.maxInFlight, perShardInFlight);
  /** A shard that ends before the signal lands needs no share: its refusal is ignored. */
  const sendShare = (shard: ChildWorkflowHandle<typeof shardWorkflow> | undefined, share: number): void =>
    void shard?.signal(inFlightShareSignal, share).catch(() => undefined);
  const raiseShares = (): void => {
    const reachable = (workflowId: string): boolean => running.has(workflowId);
    for (const [workflowId, share] of shares.raise(allStarted(), reachable))
      sendShare(running.get(workflowId), share);
  };
  setHandler(shardSubmittedSignal, ({ workflowId, holding, generationMs }) => {
    shares.handOff(workflowId, holding);
    if (generationMs) totals.learnedGenerationMs = generationMs;
    raiseShares();
  });
  const canStartShard = (): boolean => shares.submitting < parallel && shares.free() > 0;

  const carryDone = carryAll();
  const shardsDone: Promise<void>[] = [carryDone];
  while (!cancelled) {
    await condition(() => cancelled || allStarted() || (started < shards.length && canStartShard()));
    if (cancelled || allStarted()) break;
    const spec = shards[started]!;
    const { index } = spec;
    const allowance = totals.allocate(plan.shardCredits?.[index]);
    const workflowId = shardWorkflowId(runId, index);
    const args = shardInput({
      input,
      plan,
      runId,
      runExecutionId: workflowInfo().runId,
      shard: spec,
      parallel,
      maxInFlight: shares.start(workflowId),
      allowance,
      deadlineAt,
      learnedPollMs: totals.learnedPollMs,
      learnedGenerationMs: totals.learnedGenerationMs,
      paused,
      cancelled,
    });
    const child = await startChild(shardWorkflow, {
      workflowId,
      taskQueue: queues.workflow,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      ...shardPresentation(args.shard, shards.length, plan, manifestName),
      args: [args],
    });
    running.set(workflowId, child);
    started++;
    raiseShares();
    shardsDone.push(
      child.result().then((result) => {
        running.delete(workflowId);
        totals.shardFinished(index, result, allowance);
        if (result.stopReason && !reason) reason = result.stopReason;
        publish();
        indexCounts();
        shares.close(workflowId);
        raiseShares();
      }),
    );
  }
  await Promise.all(shardsDone);

  /**
   * The carried items, a few ranges at a time (each a carryOver activity); those whose results
   * could not be had any more become shards of their own, after the others.
   */
  async function carryAll(): Promise<void> {
    if (!carrying) return;
    totals.startCarryOver(plan.itemCount - generatedItems(plan));
    const regenerate: number[] = [];
    let next = 0;
    const lane = async (): Promise<void> => {
      for (let k = next++; k < carry.length && !cancelled; k = next++) {
        const range = carry[k]!;
        const summary = `carry over items[${range.offset}..${range.offset + range.count - 1}]`;
        const result = await carryOver.executeWithOptions({ summary }, [{ plan: plan.plan, ...range }]);
        totals.carried(result);
        regenerate.push(...result.regenerate);
        publish();
      }
    };
    await Promise.all(Array.from({ length: Math.min(CARRY_OVER_LANES, carry.length) }, lane));
    const firstIndex = (carry.at(-1)?.shard ?? shards.length - 1) + 1;
    shards.push(...regenerationShards(regenerate, firstIndex));
    carrying = false;
    raiseShares();
  }

  state = 'reporting';
  const report = await writeReport.executeWithOptions({ summary: 'write report.jsonl and summary.json' }, [
    {
      plan: plan.plan,
      runId,
      execution: workflowInfo().runId,
      emulated: input.emulated,
      startedAt: startTime.toISOString(),
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
