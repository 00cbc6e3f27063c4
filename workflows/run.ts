// The run workflow: one per manifest run; shards the items into child workflows.
import {
  condition,
  patched,
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
  SHARD_SIZE,
  shardSubmittedSignal,
  shardWorkflowId,
  taskQueuesOf,
} from '../common/names.js';
import type {
  ApiCallCounts,
  ItemCounts,
  PauseRequest,
  PreparedRun,
  RunInput,
  RunProgress,
  RunResult,
  RunState,
  ShardProgress,
  ShardResult,
} from '../common/types.js';
import { countAttributes, ITEMS_ATTRIBUTE, MANIFEST_ATTRIBUTE } from '../common/search-attributes.js';
import { activitiesOn } from './activities.js';
import { InFlightShares } from './in-flight-shares.js';
import { shardWorkflow } from './shard.js';
import { addTotals, describeOutcome, normalizeCounts, zeroCounts } from './tracking.js';
import { plural } from '../common/words.js';

/** Defaults of the batch-lookup pacing when the plan does not say. */
const POLL_MIN_MS = 1_000;
const POLL_MAX_MS = 10_000;

/**
 * Shards submitting at once: enough to keep `max_in_flight` items at the API, plus one. The extra
 * shard once covered the others' tails; handoffs (in-flight-shares.ts) now do that, but the
 * number decides which shards a run starts when, so changing it needs a patch for recorded runs,
 * and the benchmarks were measured with it.
 */
export function concurrentShards(shardCount: number, maxInFlight: number): number {
  return Math.max(1, Math.min(shardCount, Math.ceil(maxInFlight / SHARD_SIZE) + 1));
}

/** About how often running shards tell the run their progress, over the whole run (shardProgressSignal). */
const RUN_DETAIL_UPDATES = 20;

/** Runs recorded before shares were raised replay without the signals (test/fixtures/histories). */
const RAISE_SHARES_PATCH = 'raise-in-flight-shares';
/** Runs recorded before shards handed off (in-flight-shares.ts) replay starting shards as they close. */
const HANDOFF_PATCH = 'shard-handoff';

/**
 * Submits each shard keeps scheduled on the rate-limited queue: about 1.5 s of the run's rate
 * between all of them, enough that the queue never runs dry between a call's answer and the next
 * schedule. More only waits in the queue, and a waiting submit holds a `max_in_flight` slot: at
 * 100 per shard, submits queued 12 s at 50 calls/s and the slots ran out before the rate did.
 */
export function submitQueueDepth(requestsPerSecond: number, parallelShards: number): number {
  return Math.max(4, Math.min(100, Math.ceil((1.5 * requestsPerSecond) / parallelShards)));
}

/**
 * The submit rate a run plans its queue depth for: a fixed rate, else the run's caps, else a rate
 * above what most providers admit (the depth is bounded anyway, see submitQueueDepth).
 */
export const UNCAPPED_SUBMIT_RATE = 100;
function submitRateOf(plan: PreparedRun): number {
  if (plan.rateCaps === undefined) return plan.requestsPerSecond;
  return Math.min(plan.rateCaps.submit ?? Infinity, plan.rateCaps.all ?? Infinity, UNCAPPED_SUBMIT_RATE);
}

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
  const { configureRateLimit, joinRateGovernor, prepareRun, writeReport } = activitiesOn(queues);
  let state: RunState = 'preparing';
  let reason: string | undefined;
  let paused = false;
  let cancelled = false;
  /** Set once the plan exists (with the deadline as a moment); the progress query reads it before that too. */
  const known: { prepared?: PreparedRun; deadlineAt?: number } = {};
  let endedByDeadline = 0;
  const finished = {
    counts: zeroCounts(),
    creditsSpent: 0,
    apiCalls: { submit: 0, lookup: 0, get: 0 } as ApiCallCounts,
    images: 0,
    tasksGivenUp: 0,
  };
  const running = new Map<string, ChildWorkflowHandle<typeof shardWorkflow>>();
  /** The last progress each running shard told (shardProgressSignal), by shard index. */
  const told = new Map<number, ShardProgress>();

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
      shardCount: prepared ? Math.ceil(prepared.itemCount / SHARD_SIZE) : 0,
      finished: {
        counts: { ...finished.counts },
        creditsSpent: finished.creditsSpent,
        apiCalls: { ...finished.apiCalls },
        images: finished.images,
        tasksGivenUp: finished.tasksGivenUp,
      },
      runningShards: [...running.keys()],
      ...(prepared?.budgetCredits !== undefined ? { budgetCredits: prepared.budgetCredits } : {}),
      requestsPerSecond: prepared?.requestsPerSecond ?? 0,
      ...(prepared?.rateCaps !== undefined ? { rateCaps: prepared.rateCaps } : {}),
      ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount } : {}),
      ...(known.deadlineAt !== undefined ? { deadlineAt: known.deadlineAt } : {}),
    };
  });

  const plan = await prepareRun.executeWithOptions({ summary: 'check the manifest and write the plan' }, [
    { manifestFile: input.manifestFile, manifestHash: input.manifestHash },
  ]);
  known.prepared = plan;
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
  const shardCount = Math.ceil(plan.itemCount / SHARD_SIZE);
  // Search attributes only when the starter registered them (common/search-attributes.ts); one
  // upsert per finished shard keeps the history at a handful of events per shard.
  const manifestName = workflowInfo().typedSearchAttributes.get(MANIFEST_ATTRIBUTE);
  let shardsNotStarted = shardCount;
  /** What the finished shards did, plus what the running ones last told. */
  const sofar = (): { counts: ItemCounts; credits: number } => {
    const counts = { ...finished.counts };
    let credits = finished.creditsSpent;
    for (const shard of told.values()) {
      addTotals(counts, shard.counts);
      credits += shard.creditsSpent;
    }
    return { counts, credits };
  };
  setHandler(shardProgressSignal, (progress) => {
    // A signal the server delivers after the shard's result is already counted in `finished`.
    if (!running.has(shardWorkflowId(runId, progress.shard))) return;
    told.set(progress.shard, progress);
    publish();
  });
  const rate =
    plan.rateCaps === undefined
      ? ` API rate: ${plan.requestsPerSecond}/s (fixed).`
      : ` API rate: discovered by ${governorWorkflowId(input.apiAccount)}, whose details show the rates in force.`;
  function publish(final?: { counts: ItemCounts; credits: number }): void {
    const { counts, credits } = final ?? sofar();
    const done = shardCount - running.size - shardsNotStarted;
    const deadline =
      deadlineAt === undefined
        ? ''
        : state === 'finished' && endedByDeadline > 0
          ? ` The deadline ended it with ${plural(endedByDeadline, 'item')} unfinished.`
          : ` Deadline ${new Date(deadlineAt).toISOString()}.`;
    setCurrentDetails(
      (state === 'finished'
        ? `Finished: ${describeOutcome(counts, plan.itemCount, credits)}.`
        : `${done} of ${plural(shardCount, 'shard')} finished, ${running.size} running: ${counts.completed} of ` +
          `${plural(plan.itemCount, 'item')} completed, ${counts.failed} failed so far; ${plural(credits, 'credit')}.`) +
        deadline +
        rate,
    );
  }
  /** The search attributes: once per finished shard, so a few events per shard at most. */
  const indexCounts = (counts = finished.counts, credits = finished.creditsSpent): void => {
    if (manifestName === undefined) return;
    upsertSearchAttributes([
      { key: ITEMS_ATTRIBUTE, value: plan.itemCount },
      ...countAttributes(counts, credits),
    ]);
  };
  publish();
  indexCounts();
  const parallel = concurrentShards(shardCount, plan.maxInFlight);
  const perShardInFlight = Math.max(1, Math.ceil(plan.maxInFlight / parallel));
  /**
   * The lookup pace the last finished shard settled on. A new shard starts there rather than at
   * the minimum: its first lookups would otherwise come before any task could have finished.
   */
  let learnedPollMs: number | undefined;
  /** Budget not yet handed to a shard; a finished shard returns what it did not spend. */
  let unallocated = plan.budgetCredits;
  if (state === 'preparing') state = paused ? 'paused' : 'running';

  const absorb = (result: ShardResult, allowance: number | undefined): void => {
    addTotals(finished.counts, normalizeCounts(result.counts));
    addTotals(finished.apiCalls, result.apiCalls);
    finished.creditsSpent += result.creditsSpent;
    finished.images += result.images;
    if (unallocated !== undefined && allowance !== undefined) unallocated += allowance - result.creditsSpent;
    if (result.stopReason && !reason) reason = result.stopReason;
    if (result.pollMs !== undefined) learnedPollMs = result.pollMs;
    endedByDeadline += result.endedByDeadline ?? 0;
    finished.tasksGivenUp += result.tasksGivenUp ?? 0;
    publish();
    indexCounts();
  };

  const handOff = patched(HANDOFF_PATCH);
  const shares = new InFlightShares(plan.maxInFlight, perShardInFlight);
  /** A shard that ends before the signal lands needs no share: its refusal is ignored. */
  const sendShare = (shard: ChildWorkflowHandle<typeof shardWorkflow> | undefined, share: number): void =>
    void shard?.signal(inFlightShareSignal, share).catch(() => undefined);
  const raiseShares = (): void => {
    const reachable = (workflowId: string): boolean => running.has(workflowId);
    for (const [workflowId, share] of shares.raise(shardsNotStarted === 0, reachable))
      sendShare(running.get(workflowId), share);
  };
  setHandler(shardSubmittedSignal, ({ workflowId, holding }) => {
    shares.handOff(workflowId, holding);
    raiseShares();
  });
  const canStartShard = (): boolean =>
    handOff ? shares.submitting < parallel && shares.free() > 0 : running.size < parallel;

  const shardsDone: Promise<void>[] = [];
  for (let index = 0; index < shardCount && !cancelled; index++) {
    await condition(() => canStartShard() || cancelled);
    if (cancelled) break;
    const offset = index * SHARD_SIZE;
    let allowance: number | undefined;
    if (unallocated !== undefined) {
      allowance = Math.max(0, Math.min(unallocated, plan.shardCredits?.[index] ?? unallocated));
      unallocated -= allowance;
    }
    const workflowId = shardWorkflowId(runId, index);
    const count = Math.min(SHARD_SIZE, plan.itemCount - offset);
    const child = await startChild(shardWorkflow, {
      workflowId,
      taskQueue: queues.workflow,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      staticSummary: `shard ${index + 1} of ${shardCount}: items[${offset}..${offset + count - 1}] of ${plan.name}`,
      memo: { shard: index + 1, shards: shardCount, offset, count },
      ...(manifestName !== undefined
        ? {
            typedSearchAttributes: [
              { key: MANIFEST_ATTRIBUTE, value: manifestName },
              { key: ITEMS_ATTRIBUTE, value: count },
              ...countAttributes({ completed: 0, failed: 0 }, 0),
            ],
          }
        : {}),
      args: [
        {
          plan: plan.plan,
          runId,
          ...(input.apiAccount !== undefined ? { apiAccount: input.apiAccount } : {}),
          ...(plan.rateCaps !== undefined ? { governed: { fairnessKey: workflowInfo().runId } } : {}),
          shard: { index, offset, count },
          limits: {
            maxInFlight: handOff ? shares.start(workflowId) : perShardInFlight,
            ...(handOff ? { handOff } : {}),
            progressStep: Math.max(1, Math.ceil(plan.itemCount / RUN_DETAIL_UPDATES)),
            maxPendingSubmits: submitQueueDepth(submitRateOf(plan), parallel),
            ...(allowance !== undefined ? { allowance } : {}),
            retry: plan.retry,
            ...(plan.taskTimeoutMs !== undefined ? { taskTimeoutMs: plan.taskTimeoutMs } : {}),
            ...(deadlineAt !== undefined ? { deadlineAt } : {}),
            pollMinMs: plan.pollMinMs ?? POLL_MIN_MS,
            pollMaxMs: plan.pollMaxMs ?? POLL_MAX_MS,
            ...(learnedPollMs !== undefined ? { firstPollMs: learnedPollMs } : {}),
            ...(input.webhookBaseUrl ? { webhookBaseUrl: input.webhookBaseUrl } : {}),
            ...(input.tuning?.shardHistoryLimit ? { historyLimit: input.tuning.shardHistoryLimit } : {}),
          },
          paused,
          cancelled,
        },
      ],
    });
    running.set(workflowId, child);
    shardsNotStarted--;
    if (handOff) raiseShares();
    shardsDone.push(
      child.result().then((result) => {
        running.delete(workflowId);
        told.delete(index);
        absorb(result, allowance);
        if (handOff) {
          shares.close(workflowId);
          raiseShares();
        } else if (shardsNotStarted === 0 && running.size > 0 && patched(RAISE_SHARES_PATCH)) {
          // Before handoffs: once every shard had started, the last ones got the finished shards' shares.
          const share = Math.floor(plan.maxInFlight / running.size);
          for (const other of running.values()) sendShare(other, share);
        }
      }),
    );
  }
  await Promise.all(shardsDone);

  state = 'reporting';
  const report = await writeReport.executeWithOptions({ summary: 'write report.jsonl and summary.json' }, [
    {
      plan: plan.plan,
      runId,
      emulated: input.emulated,
      startedAt: startTime.toISOString(),
      apiCalls: finished.apiCalls,
      ...(finished.tasksGivenUp > 0 ? { tasksGivenUp: finished.tasksGivenUp } : {}),
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
    apiCalls: finished.apiCalls,
    reportFile: report.reportFile,
    summaryFile: report.summaryFile,
    ...(report.galleryFile !== undefined ? { galleryFile: report.galleryFile } : {}),
    ...(report.notCompleted?.length ? { notCompleted: report.notCompleted } : {}),
    stateDir: plan.plan.stateDir,
    ...(endedByDeadline > 0 ? { endedByDeadline } : {}),
  };
}
