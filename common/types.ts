// Inputs and outputs of pixelmill's workflows and activities. Workflows carry references (the
// plan's store and hash, item indices), never prompts or images: bulk data stays in the run's
// store (a directory or an S3 prefix), which activities read and write.
import type { RateCaps } from '../governor/types.js';
import type { S3Location } from '../storage/s3-location.js';
import type { NotifyTarget } from './notify-types.js';
import type { BatchTotals } from './batch-types.js';

/** Final status of an item in report.jsonl. */
export type ItemStatus = 'completed' | 'failed' | 'cancelled' | 'expired' | 'skipped';

/** A failure as report.jsonl gives it; common/errors.ts's FailureDetails adds what decides a retry. */
export interface ErrorSummary {
  /** The failure type (common/failure-types.ts), e.g. `RateLimitError`: what workflows match. */
  type: string;
  code: string;
  message: string;
}

/** Where a run keeps its files; every activity gets this instead of data. */
export interface PlanRef {
  /**
   * Where the run's state (frozen plan, outcomes, submit journal) lives: `<output>/.pixelmill` on
   * local disk, or `s3://bucket/prefix/.pixelmill` for an S3 output (then `objectStore` is set).
   */
  stateDir: string;
  /** sha256 of the manifest (and items file) the plan was made from. */
  planHash: string;
  /** An S3 output: where its state is (under its prefix) and how to reach it; never credentials. */
  objectStore?: S3Location;
}

export interface RunInput {
  /**
   * The plan the starter froze in the run's store: workers read it there and never the manifest,
   * so they need no file of the starter's machine.
   */
  plan: PlanRef;
  /**
   * The API account the run's calls belong to (common/api-account.ts): every activity of the run
   * goes to that account's task queues. Runs started before accounts existed have none.
   */
  apiAccount?: string;
  /** The account's base URL, without credentials: for messages, never for calls. */
  apiBaseUrl?: string;
  /** The manifest's hash (the plan's): what the run was started with. */
  manifestHash: string;
  /** True when the run talks to the built-in emulator rather than a real service. */
  emulated: boolean;
  /** Optional webhook base URL (the fast path); tasks are still polled as a safety net. */
  webhookBaseUrl?: string;
  /** Internal knobs for tests and benchmarks. */
  tuning?: { shardHistoryLimit?: number; runHistoryLimit?: number; runCheckMs?: number };
  /** State carried over continue-as-new (workflows/run.ts, continueAsNewQuietly). */
  carried?: RunCarriedState;
  /** The manifest's `notify:` entries (variable names, never URLs): workflows/run-notify.ts. */
  notify?: NotifyTarget[];
  /** The schedule whose firing started the run (workflows/scheduled-run.ts), for its notifications. */
  schedule?: string;
}

/** What a run carries into its next execution: everything its shards' bookkeeping needs. */
export interface RunCarriedState {
  prepared: PreparedRun;
  /** The first execution's start (ISO): the report's start and the deadline's origin. */
  startedAt: string;
  deadlineAt?: number;
  state: RunState;
  reason?: string;
  paused: boolean;
  cancelled: boolean;
  totals: RunTotalsState;
  /** Shards submitting at once, fixed when the first shards started (concurrentShards). */
  parallel: number;
  /** Shards started so far (in order of `index`). */
  started: number;
  /** Started shards that have not told their result, with the budget each was given. */
  running: { workflowId: string; index: number; allowance?: number }[];
  shares: InFlightSharesState;
  /** An incremental run's carried items: ranges checked so far, and those to generate after all. */
  carry?: { next: number; done: boolean; regenerate: number[] };
}

/** What a run's finished shards did, summed. */
export interface FinishedTotals {
  counts: ItemCounts;
  creditsSpent: number;
  apiCalls: ApiCallCounts;
  images: number;
  tasksGivenUp: number;
  tasksRejected: number;
  creditsRejected: number;
  /** The finished batch shards' batches (batch mode). */
  batches?: BatchTotals;
}

export interface RunTotalsState {
  finished: FinishedTotals;
  endedByDeadline: number;
  learnedPollMs?: number;
  learnedGenerationMs?: number[];
  learnedSlots?: HandedSlots;
  told: ShardProgress[];
  unallocated?: number;
  carryOver?: CarryOverTotals;
}

export interface InFlightSharesState {
  submitting: [shard: string, share: number][];
  tails: [shard: string, holding: number][];
}

/** Settings resolved from the manifest, small enough for workflow state. */
export interface PreparedRun {
  plan: PlanRef;
  name: string;
  itemCount: number;
  imageCount: number;
  /** The output folder, or the `s3://` URL of an S3 output. */
  outputDir: string;
  requestsPerSecond: number;
  /** Present when the rate is discovered (`auto`): the manifest's numbers as caps. */
  rateCaps?: RateCaps;
  maxInFlight: number;
  budgetCredits?: number;
  /** Expected credits per image, by resolution, for budget checks before the first charge is known. */
  creditsPerImage: Record<string, number>;
  retry: { maxAttempts: number; on: string[] };
  /** `limits.task_timeout` in ms; absent in runs recorded before it existed. */
  taskTimeoutMs?: number;
  /** `limits.deadline`: after the run's start, or a moment (epoch ms). */
  deadline?: { afterMs: number } | { atMs: number };
  /** Estimated credits of each shard's items (by creditsPerImage), for handing out the budget. */
  shardCredits?: number[];
  /** Batch-lookup pacing: the interval grows from min to max while nothing finishes. */
  pollMinMs?: number;
  pollMaxMs?: number;
  /**
   * An incremental run's: items [0, generateCount) are generated, the rest carried over from the
   * catalog (absent: every item is generated).
   */
  generateCount?: number;
  /** How the run's provider tells task states (absent: `batch`). */
  lookup?: 'batch' | 'list' | 'single';
  /** The provider streams each task's status (its capabilities' `statusStream`). */
  statusStream?: boolean;
  /**
   * The provider limits tasks running at once: what its documentation says, when it does, and
   * whether a submit over it is refused (providers/types.ts, ProviderLimits).
   */
  concurrency?: { documented?: number; refused?: boolean };
  /** Where the account's governor starts its rates when this run starts it (a provider that documents no rate limit). */
  startPerSecond?: number;
  /** The provider can cancel a task (its capabilities). */
  cancel?: boolean;
  /** How work reaches the provider when not as tasks (providers/types.ts, Submission): the shard workflow to start. */
  submission?: 'batch-file' | 'held-call';
  /** Batch mode's polling (the first wait) and where unfinished items go again. */
  batch?: BatchLimits;
}

/** A batch shard's own limits (workflows/batch-shard.ts). */
export interface BatchLimits {
  /** The wait before a batch's first status call; each later wait half as long again, up to maxPollMs. */
  pollMs: number;
  /** The longest wait (absent in runs started before it: 20 times pollMs, at most 10 minutes). */
  maxPollMs?: number;
  /** `api.max_enqueued_images`: what the status of the run's batches measures their images against. */
  enqueuedImages?: number;
  /** Where unfinished items are generated again: a new batch, or held calls. */
  retryIn: 'batch' | 'sync';
}

export interface ShardSpec {
  index: number;
  /** First item (index into the plan) and item count. */
  offset: number;
  count: number;
  /**
   * The plan indices of its items, when they are not `offset` onwards: an incremental run's items
   * whose stored results could not be carried over, generated after all.
   */
  indices?: number[];
}

/** Counts of items by where they are; every item is in exactly one. */
export interface ItemCounts {
  /** Not yet submitted (including items waiting to be resubmitted). */
  queued: number;
  /** Accepted by the API, waiting for a generator (or not looked up since). */
  submitted: number;
  /** Being generated, as of the shard's last batch lookup. */
  processing: number;
  /** Generated; results being fetched and stored. */
  storing: number;
  /** Final states. */
  completed: number;
  failed: number;
  cancelled: number;
  expired: number;
  skipped: number;
}

export interface ApiCallCounts {
  submit: number;
  lookup: number;
  get: number;
}

export interface ShardProgress {
  shard: number;
  counts: ItemCounts;
  creditsSpent: number;
  /**
   * Credits the API holds for tasks not finished yet, as estimated from the price table (the
   * API takes them at submit); known only under a budget, absent otherwise.
   */
  creditsReserved?: number;
  apiCalls: ApiCallCounts;
  images: number;
  /** Tasks given up after limits.task_timeout (each resubmitted or failed); absent before timeouts. */
  tasksGivenUp?: number;
  /** Completed tasks whose images failed a check and were generated again (`checks`, `retry.on`). */
  tasksRejected?: number;
  /** A batch shard's batches (batch mode): in flight, ended, their requests. */
  batches?: BatchTotals;
  paused: boolean;
  cancelled: boolean;
}

export type RunState = 'preparing' | 'running' | 'paused' | 'cancelling' | 'reporting' | 'finished';

export interface RunProgress {
  runId: string;
  name: string;
  state: RunState;
  emulated: boolean;
  /** Why the run is paused (a 402, the operator), or why submission stopped (budget). */
  reason?: string;
  itemCount: number;
  shardCount: number;
  /** Totals of finished shards; running shards answer their own `shardProgress` query. */
  finished: Omit<ShardProgress, 'shard' | 'paused' | 'cancelled'>;
  runningShards: string[];
  budgetCredits?: number;
  requestsPerSecond: number;
  /** Present when the rate is discovered: the run's caps (the rates in force: the governor's query). */
  rateCaps?: RateCaps;
  /** The run's API account, whose governor knows the rates in force. */
  apiAccount?: string;
  /** The run's deadline (epoch ms), when it has one. */
  deadlineAt?: number;
  /** An incremental run's carried items, as far as they are checked. */
  carryOver?: CarryOverTotals;
  /** How its items reach the provider when not as tasks (PreparedRun.submission): `batch-file` shows batches, not rates. */
  submission?: 'batch-file' | 'held-call';
}

/** An incremental run's items carried over from its catalog, so far. */
export interface CarryOverTotals {
  /** Items the plan carries over. */
  items: number;
  /** Carried over: completed without a task (counted in `completed` too). */
  reused: number;
  /** Of those, fetched again (their stored files were gone or altered). */
  restored: number;
  /** Of those, copied to their new paths. */
  moved: number;
  /** Items whose results could not be had any more: generated after all. */
  regenerated: number;
}

export interface ShardLimits {
  /** Items of this shard that may be at the API at once. */
  maxInFlight: number;
  /** Submits scheduled and not yet answered (default 100): see submitQueueDepth in workflows/run-shards.ts. */
  maxPendingSubmits?: number;
  /** Credits this shard may commit; undefined = no budget. */
  allowance?: number;
  retry: { maxAttempts: number; on: string[] };
  /** A task unfinished at the API after this long is given up; absent: never. */
  taskTimeoutMs?: number;
  /** The run's deadline (epoch ms, workflow time): nothing is submitted from then on. */
  deadlineAt?: number;
  pollMinMs: number;
  pollMaxMs: number;
  /** The first lookup's wait: what earlier shards of the run learned (default pollMinMs). */
  firstPollMs?: number;
  /** Generation times earlier shards of the run saw (ms): when this one's first lookups are due. */
  generationMs?: number[];
  webhookBaseUrl?: string;
  /**
   * Without webhooks, the workers follow each task's status stream and signal its end
   * (activities/status-followers.ts): lookups then only catch what a stream missed.
   */
  statusStreams?: boolean;
  /** History length at which the shard continues as new (default SHARD_HISTORY_LIMIT). */
  historyLimit?: number;
  /** How often a submitting shard checks that its run is there (default RUN_CHECK_MS, workflows/run-check.ts). */
  runCheckMs?: number;
  /** Tell the run (shardSubmittedSignal) once every item has been submitted. */
  handOff?: boolean;
  /** Tell the run its progress (shardProgressSignal) each time this many more items are final. */
  progressStep?: number;
  /** How the provider tells task states (providers/types.ts, LookupStyle): absent means `batch`. */
  lookup?: 'batch' | 'list' | 'single';
  /**
   * The provider limits tasks running at once (its capabilities): the shard learns how many it may
   * keep in flight (workflows/concurrency-cap.ts), starting from `start`. `refused`: it refuses
   * what it cannot start (BFL's 429); else it queues it (fal), and `sharing` shards submitting at
   * once share the account's queue.
   */
  concurrency?: { start: number; refused?: boolean; sharing?: number; handed?: HandedSlots };
  /** The provider can cancel a task: at the deadline, those it has not started are cancelled. */
  cancel?: boolean;
  /** Work goes to the provider as batch files or held calls (PreparedRun.submission): the batch shard. */
  submission?: 'batch-file' | 'held-call';
  batch?: BatchLimits;
}

export interface GovernedCalls {
  /** Temporal's fairness key of the run's API calls: runs of one account share its rate evenly. */
  fairnessKey: string;
}

export interface ShardInput {
  plan: PlanRef;
  runId: string;
  /** The run's API account, whose task queues the shard's activities go to. */
  apiAccount?: string;
  /** Present when the run's rate is discovered: its calls go to the governed queues (activitiesOn). */
  governed?: GovernedCalls;
  shard: ShardSpec;
  limits: ShardLimits;
  paused: boolean;
  cancelled: boolean;
  /** State carried over continue-as-new. */
  carried?: ShardCarriedState;
}

/** Per-item state, as parallel arrays (compact in history across continue-as-new). */
export interface ShardCarriedState {
  phase: number[];
  taskIds: (string | null)[];
  attempts: number[];
  credits: number[];
  estimates: number[] | null;
  outcomes: RecordOutcomesInput['outcomes'];
  apiCalls: ApiCallCounts;
  images: number;
  paused: boolean;
  cancelled: boolean;
  budgetStopped: boolean;
  pollMs: number;
  /** The interval set by the last lookup while items were still queued (the shard's steady pace). */
  busyPollMs?: number;
  /** When the next batch lookup is due (workflow time, ms), once its wait has begun. */
  nextLookupAt?: number;
  /** Set once the run has been told that every item was submitted. */
  handedOff?: boolean;
  /**
   * What the shard held when it handed off, until it tells the run that its tail has shrunk
   * (workflows/shard.ts, releaseTail); then cleared. Absent in runs handed off by older code.
   */
  handedOffHolding?: number;
  /** When each item's current task was accepted (workflow time, ms); absent in older runs. */
  submittedAt?: (number | null)[];
  /** Set once the run's deadline has passed: nothing more is submitted. */
  deadlinePassed?: boolean;
  /** Tasks given up after limits.task_timeout so far. */
  givenUp?: number;
  /** Tasks whose images failed a check and were generated again, and what they were charged. */
  checkRejected?: number;
  checkRejectedCredits?: number;
  /** When the last batch lookup answered (workflow time, ms), and how many finished tasks it found. */
  lastLookup?: { atMs: number; finished: number };
  /** Generation times the shard's lookups saw (ms, the newest): see workflows/lookup-timing.ts. */
  generationMs?: number[];
  /** `single` lookups (single-checks.ts): calls made about each item's current task, and when the last was answered. */
  checks?: number[];
  checkedAt?: (number | null)[];
  /** The concurrency the shard has learned (workflows/concurrency-cap.ts); absent while none limits it. */
  concurrency?: ConcurrencyCapState;
  /** What those lost tasks cost (charged all the same). */
  lostCredits?: number;
  /** Items whose task was cancelled at the provider when the deadline passed (its lookups then say so). */
  cancelledAtDeadline?: number[];
}

export interface ShardHandoff {
  workflowId: string;
  /**
   * Items not final yet (at the API, or waiting to be submitted again): all the shard can ever
   * have at the API again. Sent when the shard hands off, and once more when its tail has shrunk.
   */
  holding: number;
  /** Generation times the shard saw: where the run's next shards start. */
  generationMs?: number[];
  /** Its slots at a provider that refuses what it cannot start: the next shard starts with them. */
  slots?: HandedSlots;
}

/**
 * A shard's slots at a provider that refuses tasks over its concurrency, handed to the run's next
 * shard (workflows/concurrency-cap.ts): the cap it learned, and its tasks still holding a slot.
 */
export interface HandedSlots {
  cap: number;
  /** When each of those tasks was submitted (workflow time). */
  heldSinceMs: number[];
}

export interface ShardResult {
  shard: number;
  /** Set when the shard's workflow failed (told by shardFinishedSignal): the run fails with it. */
  failure?: string;
  counts: ItemCounts;
  creditsSpent: number;
  apiCalls: ApiCallCounts;
  images: number;
  /** Set when the shard stopped submitting because of the budget or a 402. */
  stopReason?: string;
  /** The lookup interval the shard settled on while submitting: where the next shard starts. */
  pollMs?: number;
  /** Items left unfinished when the run's deadline passed. */
  endedByDeadline?: number;
  /** Tasks given up after limits.task_timeout. */
  tasksGivenUp?: number;
  /** Tasks whose images failed a check and were generated again, and what they were charged. */
  tasksRejected?: number;
  creditsRejected?: number;
  /** A batch shard's batches, every one ended. */
  batches?: BatchTotals;
}

export interface PauseRequest {
  reason?: string;
}

export interface RunResult {
  /** One line for whoever reads the result in the Temporal UI: what completed and what did not. */
  outcome?: string;
  name: string;
  counts: ItemCounts;
  images: number;
  creditsSpent: number;
  apiCalls: ApiCallCounts;
  /** Where the report went: a local path, or an `s3://` URL for an S3 output. */
  reportFile: string;
  summaryFile: string;
  /**
   * Where the run's state is (plan and outcomes): a local folder or an `s3://` URL; absent from
   * results of older versions.
   */
  stateDir?: string;
  /** Items left unfinished when the run's deadline passed (reported `cancelled`, code `deadline`). */
  endedByDeadline?: number;
  /** Absent from results of older versions. */
  galleryFile?: string;
  notCompleted?: NotCompletedGroup[];
  /** An incremental run's carried items. */
  carryOver?: CarryOverTotals;
  /** A batch run's batches, every one ended. */
  batches?: BatchTotals;
}

/** A task's terminal state as a webhook announced it, routed to its shard as a signal. */
export interface TaskFinishedSignal {
  taskId: string;
  status: string;
  urls?: string[];
  /** When the result URLs stop working (ms since the epoch). */
  expiresAt?: number;
  creditsCost?: number;
  error?: ErrorSummary;
  /** Lookup calls the signal's sender made to learn this (a status stream's): 0 for a webhook. */
  lookupCalls?: number;
  /** The sender's call learned nothing final (a status stream that broke): only counted. */
  callOnly?: true;
}

// ----- activities -----

export interface PrepareRunInput {
  plan: PlanRef;
}

export interface SubmitItemInput {
  plan: PlanRef;
  index: number;
  /** 1 for the first submission of the item. */
  attempt: number;
  /** Full webhook base address for this item's task, when webhooks are on. */
  webhook?: string;
  /** Without webhooks, follow the task's status stream and signal the shard when it ends (activities/status-followers.ts). */
  follow?: boolean;
  /** The run's deadline (epoch ms): a submit still waiting for its turn then is not sent. */
  notAfter?: number;
  /**
   * The call a submitSlice made for this item (SlicedSubmit.retryAs): this one is its retry, with
   * its journal entry and Idempotency-Key, so that a task that call created is taken, not billed
   * twice, and with its failure counted among those that decide a refusal.
   */
  carriesOn?: CarriedSubmit;
  /**
   * A task the API accepted for the shard lately: what a probe looks up (activities/api-evidence.ts)
   * when the worker has seen no submit accepted, as one started after the run's other submits.
   */
  probeTaskId?: string;
}

/** A slice's submit of one item that failed in a way a retry may heal, for submitItem to carry on. */
export interface CarriedSubmit {
  /** The call's activity id (`<slice's activity id>/<plan index>`). */
  call: string;
  /** When the slice tried it (epoch ms): the other submits since then are the evidence. */
  triedAt: number;
  /** What the API answered (`500 build_request_failed`). */
  answer: string;
}

/** A slice of a shard's queued items for one submitSlice activity (plan indices). */
export interface SubmitSliceInput {
  plan: PlanRef;
  items: { index: number; attempt: number }[];
  /** As in SubmitItemInput, the same for every item of a shard. */
  webhook?: string;
  follow?: boolean;
  notAfter?: number;
}

/** What became of one item of a slice: exactly one of the four. */
export interface SlicedSubmit {
  index: number;
  /** The API accepted it. */
  taskId?: string;
  /** What the provider said the task costs, when it says so at submit (BFL). */
  creditsCost?: number;
  /** The account's tasks waiting ahead of it in the provider's queue, when its answer said (fal). */
  queuePosition?: number;
  /** The API refused it for good (a non-retryable answer): its item's failure. */
  failure?: ErrorSummary;
  /** It failed in a way a retry may heal: retry it alone (submitItem) as the continuation of this call. */
  retryAs?: CarriedSubmit;
  /** Not sent, or refused by the rate limit (nothing was created): back to the queue. */
  untried?: true;
  /** Refused for the provider's concurrency (too many tasks running): untried, and the shard keeps fewer in flight. */
  overConcurrency?: true;
}

export interface SubmitSliceOutput extends ApiCallsMade {
  items: SlicedSubmit[];
}

/**
 * API calls an API activity made: its attempt number, since every attempt before it made one
 * call that failed or was refused (a 429 counts: it spent the rate limit). Absent in results of
 * older versions: one.
 */
export interface ApiCallsMade {
  calls?: number;
}

export interface SubmitItemOutput extends ApiCallsMade {
  taskId: string;
  /** What the provider said the task costs, when it says so at submit (BFL). */
  creditsCost?: number;
}

export interface LookupTasksInput {
  plan: PlanRef;
  /** The tasks' references (common/task-ref.ts). */
  taskIds: string[];
  /** A list-style provider sweeps the tasks created from here on (ms, a little before the oldest asked). */
  sinceMs?: number;
}

export interface LookupTasksOutput extends ApiCallsMade {
  /** Parallel to `taskIds`: a task state, `expired`, `not_found`, `invalid_id`, or an unknown value. */
  statuses: string[];
  /** Finished tasks' results, where the provider's answer carried them (null elsewhere). */
  results?: (TaskResult | null)[];
  /** Tasks the provider said wait in its queue behind others (fal's IN_QUEUE): the account is over its concurrency. */
  queued?: number;
}

export interface FetchTaskInput {
  plan: PlanRef;
  taskId: string;
  /** The item's plan index: what a provider that reports no cost is estimated to charge for it. */
  index?: number;
  /** The task's terminal state as a webhook or a lookup told it: no call, only its cost estimated. */
  known?: TaskResult;
}

/** A finished task as a webhook or a GET told it. */
export interface TaskResult {
  /** completed | failed | pending | processing | expired | not_found | an unknown value. */
  status: string;
  urls?: string[];
  expiresAt?: number;
  creditsCost?: number;
  error?: ErrorSummary;
}

export interface FetchTaskOutput extends TaskResult, ApiCallsMade {}

export interface StoreRequest {
  index: number;
  taskId: string;
  urls: string[];
  /** When the URLs stop working (ms since the epoch), as the API said. */
  expiresAt?: number;
  attempts: number;
  creditsCost: number;
}

/** An incremental run's carried items `offset` onwards; their outcome lines go to `shard`'s. */
export interface CarryOverInput {
  plan: PlanRef;
  offset: number;
  count: number;
  shard: number;
}

export interface CarryOverOutput {
  /** Items carried over: an outcome line each. */
  reused: number;
  /** Of those, fetched again from their result URLs (their stored files were gone or altered). */
  restored: number;
  /** Of those, copied to the paths their id or the path template now gives. */
  moved: number;
  /** Plan indices of items whose results could not be had any more: to generate. */
  regenerate: number[];
}

export interface StoreResultsInput {
  plan: PlanRef;
  shard: number;
  items: StoreRequest[];
}

export interface StoredItem {
  index: number;
  /** `completed` when every image is stored, else `expired` (URL gone) or `failed`. */
  status: 'completed' | 'expired' | 'failed';
  images: number;
  error?: ErrorSummary;
}

export interface StoreResultsOutput {
  items: StoredItem[];
}

/** One finished task for collectResults: its result when a webhook told it, else to GET. */
export interface CollectRequest {
  index: number;
  taskId: string;
  attempts: number;
  known?: TaskResult;
  /** What the provider announced at submit the task costs (BFL), when it did. */
  creditsCost?: number;
}

export interface CollectResultsInput {
  plan: PlanRef;
  shard: number;
  items: CollectRequest[];
}

export interface CollectedItem {
  index: number;
  /** What the task came to; absent when its GET did not go through (the workflow fetches it apart). */
  result?: TaskResult;
  /** What was stored of a completed task's images. */
  stored?: StoredItem;
}

export interface CollectResultsOutput extends ApiCallsMade {
  items: CollectedItem[];
}

export interface RecordOutcomesInput {
  plan: PlanRef;
  shard: number;
  outcomes: {
    index: number;
    status: ItemStatus;
    taskId: string | null;
    attempts: number;
    creditsCost: number;
    error: ErrorSummary | null;
  }[];
}

export interface WriteReportInput {
  plan: PlanRef;
  runId: string;
  /** The run's Temporal execution: with runId, how the output's catalog index names the run. */
  execution?: string;
  emulated: boolean;
  startedAt: string;
  apiCalls: ApiCallCounts;
  /** Tasks the run gave up after limits.task_timeout. */
  tasksGivenUp?: number;
  /** Tasks whose images failed a check and were generated again, and what they were charged. */
  tasksRejected?: number;
  creditsRejected?: number;
  /** The median generation time its lookups learned (ms), for the catalog's next plan. */
  generationMs?: number;
  /** An incremental run's carried items. */
  carryOver?: CarryOverTotals;
  /** A batch run's batches (summary.json's `batches`, in place of `rates`). */
  batches?: BatchTotals;
}

/** Items that did not complete with the same status and error: how many, and the first ids. */
export interface NotCompletedGroup {
  status: Exclude<ItemStatus, 'completed'>;
  type: string;
  code: string;
  count: number;
  /** The first few items' ids, in catalog order. */
  ids: string[];
}

export interface WriteReportOutput {
  counts: ItemCounts;
  images: number;
  creditsSpent: number;
  reportFile: string;
  summaryFile: string;
  /** Absent from results of older versions. */
  galleryFile?: string;
  notCompleted?: NotCompletedGroup[];
}

export interface PlanShardInput {
  plan: PlanRef;
  offset: number;
  count: number;
  /** The shard's plan indices, when they are not `offset` onwards (ShardSpec.indices). */
  indices?: number[];
  /** Priced in this mode rather than the run's (a batch run's retry rounds in sync: `api.retry_in`). */
  mode?: 'batch' | 'sync';
}

export interface PlanShardOutput {
  /** Estimated credits of each item (runstate/plan.ts's estimatedCredits). */
  credits: number[];
}

export interface ApplyGroupRatesInput {
  queues: { taskQueue: string; ratePerSecond: number; source: string }[];
}

export interface ConfigureRateLimitInput {
  requestsPerSecond: number;
  /** The run's API task queue; the shared legacy queue when absent. */
  taskQueue?: string;
}

/** What a shard has learned of its provider's concurrency (workflows/concurrency-cap.ts). */
export interface ConcurrencyCapState {
  /** The cap set at the last signal (or the start). */
  base: number;
  /** Items the provider was done with when it was set: each one since adds to the cap (concurrency-cap.ts). */
  doneAt: number;
  /** No signal yet: the cap grows by one per completion (slow start); after one, by one per `base`. */
  probing: boolean;
  /**
   * The provider refuses and only polls tell: no cap, the submits ask for slots; once refused,
   * `base` is the concurrency the refusals showed (workflows/asked-slots.ts).
   */
  polled?: boolean;
  /** A submit's answer said how many waited ahead: the queue is read there, not from lookups. */
  queueAtSubmit?: boolean;
  /** When a submit's answer last changed the cap (workflow time): earlier slices' answers are stale. */
  changedAtMs?: number;
}

export interface CancelTasksInput {
  plan: PlanRef;
  /** The tasks' references (common/task-ref.ts). */
  taskIds: string[];
}
