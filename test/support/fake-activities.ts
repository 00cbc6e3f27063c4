// Stub activities for workflow-logic tests: an in-memory "API" whose behaviour each test scripts.
// Real activities are tested against the real emulator in their own files.
import type { createActivities } from '../../activities/index.js';
import type {
  CarryOverInput,
  CollectResultsInput,
  CollectResultsOutput,
  FetchTaskInput,
  FetchTaskOutput,
  LookupTasksInput,
  PreparedRun,
  RecordOutcomesInput,
  StoreResultsInput,
  StoreResultsOutput,
  SlicedSubmit,
  SubmitItemInput,
  SubmitSliceInput,
  WriteReportInput,
} from '../../common/types.js';
import { ApplicationFailure } from '@temporalio/common';
import { zeroCounts } from '../../common/item-counts.js';
import { storeRequestOf } from '../../common/store-request.js';

type Activities = ReturnType<typeof createActivities>;

export interface FakeScenario {
  items: number;
  /** Lookups a task stays pending before it finishes: for every task, or by item index. */
  lookupsToFinish?: number | ((index: number) => number);
  /** Decides a task's terminal status by item index and attempt. */
  fails?: (index: number, attempt: number) => { type: string; code: string } | undefined;
  /** Answers 402 to this many submits (the first ones). */
  insufficientCredits?: number;
  /** Answers 401 (the key refused) to this many submits (the first ones). */
  keyRefused?: number;
  maxInFlight?: number;
  budgetCredits?: number;
  retry?: { maxAttempts: number; on: string[] };
  /** The plan's poll bounds; default 1 s and 5 s. */
  poll?: { minMs: number; maxMs: number };
  /** An incremental run: the first `generate` items are generated, the rest carried over. */
  generate?: number;
  /** Carried items whose stored result cannot be had any more (by plan index). */
  carryFails?: (index: number) => boolean;
  /**
   * Holds an item's submit until the promise settles, as an API that keeps failing it holds the
   * activity in Temporal's retries; the submit then succeeds.
   */
  holdSubmit?: (index: number, api: FakeApi) => Promise<void> | undefined;
  /** Items whose submit fails in its slice in a way a retry may heal: the workflow retries them alone. */
  failsInSlice?: (index: number) => boolean;
  /** collectResults' GET of this item's task does not go through (the workflow fetches it apart). */
  collectGetFails?: (index: number) => boolean;
  /** collectResults takes this long, as downloads and checks of large images do. */
  collectMs?: number;
  /** The plan's request rate, which sets how many submits a shard keeps scheduled; default 1,000. */
  requestsPerSecond?: number;
  /** collectResults fails for good, as with a store that refuses every write. */
  collectFails?: boolean;
  /** recordOutcomes of this shard fails for good: the shard's workflow fails. */
  recordFails?: (shard: number) => boolean;
}

export type FakeEvent =
  { event: 'submit'; index: number; attempt: number } | { event: 'store'; index: number };

export interface FakeApi {
  activities: Partial<Activities>;
  /** Submits and stores in the order they happened. */
  timeline: FakeEvent[];
  /** The submits of the timeline. */
  readonly submits: { index: number; attempt: number }[];
  /** The item indices stored, from the timeline. */
  readonly stored: number[];
  lookups: number;
  /** GETs, whether in collectResults or apart. */
  gets: number;
  /** Items whose task was fetched by a fetchTask activity of its own. */
  fetchedApart: number[];
  outcomes: RecordOutcomesInput['outcomes'];
  maxConcurrentAtApi: number;
}

export function fakeApi(scenario: FakeScenario): FakeApi {
  const tasks = new Map<string, { index: number; attempt: number; lookups: number; done: boolean }>();
  const { lookupsToFinish: finishAfter = 1 } = scenario;
  const lookupsToFinish = typeof finishAfter === 'number' ? () => finishAfter : finishAfter;
  /** Account refusals still to answer, first ones first: 401s, then 402s. */
  const refusals = [
    {
      left: scenario.keyRefused ?? 0,
      type: 'AuthenticationError',
      message: 'POST /v1/images/generations failed with 401 invalid_api_key',
    },
    {
      left: scenario.insufficientCredits ?? 0,
      type: 'InsufficientCreditsError',
      message: 'insufficient credits',
    },
  ];
  const api: FakeApi = {
    activities: {},
    timeline: [],
    get submits() {
      return this.timeline.flatMap((e) =>
        e.event === 'submit' ? [{ index: e.index, attempt: e.attempt }] : [],
      );
    },
    get stored() {
      return this.timeline.flatMap((e) => (e.event === 'store' ? [e.index] : []));
    },
    lookups: 0,
    gets: 0,
    fetchedApart: [],
    outcomes: [],
    maxConcurrentAtApi: 0,
  };
  const atApi = (): number => [...tasks.values()].filter((task) => !task.done).length;

  async function fetchTask(input: FetchTaskInput): Promise<FetchTaskOutput> {
    api.fetchedApart.push(tasks.get(input.taskId)!.index);
    return getTask(input);
  }
  async function getTask(input: FetchTaskInput): Promise<FetchTaskOutput> {
    api.gets++;
    const task = tasks.get(input.taskId)!;
    task.done = true;
    const failure = scenario.fails?.(task.index, task.attempt);
    if (failure) return { status: 'failed', creditsCost: 0, error: { ...failure, message: 'it failed' } };
    return { status: 'completed', urls: [`http://results.invalid/${input.taskId}/0.png`], creditsCost: 1 };
  }
  async function storeResults(input: StoreResultsInput): Promise<StoreResultsOutput> {
    for (const item of input.items) api.timeline.push({ event: 'store', index: item.index });
    return {
      items: input.items.map((item) => ({
        index: item.index,
        status: 'completed' as const,
        images: item.urls.length,
      })),
    };
  }

  /**
   * A slice as the real one ends it: each item through the (scriptable) submitItem, all at once;
   * a refusal for good is the item's failure, anything else its retry alone.
   */
  async function submitSlice(input: SubmitSliceInput) {
    const { items: slice, ...target } = input;
    const retryAlone = (index: number): SlicedSubmit => ({
      index,
      retryAs: { call: `slice-item-${index}`, triedAt: Date.now(), answer: '500 server_error' },
    });
    const items = await Promise.all(
      slice.map(async ({ index, attempt }): Promise<SlicedSubmit> => {
        if (scenario.failsInSlice?.(index)) return retryAlone(index);
        try {
          const { taskId } = await api.activities.submitItem!({ ...target, index, attempt });
          return { index, taskId };
        } catch (error) {
          if (!(error instanceof ApplicationFailure) || !error.nonRetryable) return retryAlone(index);
          return {
            index,
            failure: { type: error.type ?? 'Error', code: error.type ?? 'error', message: error.message },
          };
        }
      }),
    );
    return { items, calls: slice.length };
  }

  api.activities = {
    async prepareRun(): Promise<PreparedRun> {
      return {
        plan: { stateDir: '/nonexistent', planHash: 'h' },
        name: 'fake',
        itemCount: scenario.items,
        imageCount: scenario.items,
        outputDir: '/nonexistent',
        requestsPerSecond: scenario.requestsPerSecond ?? 1000,
        maxInFlight: scenario.maxInFlight ?? 1000,
        ...(scenario.budgetCredits !== undefined ? { budgetCredits: scenario.budgetCredits } : {}),
        creditsPerImage: { '1K': 1 },
        retry: scenario.retry ?? { maxAttempts: 1, on: [] },
        shardCredits: Array.from({ length: Math.ceil(scenario.items / 500) }, (_, k) =>
          Math.min(500, scenario.items - k * 500),
        ),
        pollMinMs: scenario.poll?.minMs ?? 1000,
        pollMaxMs: scenario.poll?.maxMs ?? 5000,
        ...(scenario.generate !== undefined ? { generateCount: scenario.generate } : {}),
      };
    },
    async carryOver(input: CarryOverInput) {
      const indices = Array.from({ length: input.count }, (_, k) => input.offset + k);
      const regenerate = indices.filter((index) => scenario.carryFails?.(index));
      return { reused: input.count - regenerate.length, restored: 0, moved: 0, regenerate };
    },
    async configureRateLimit(): Promise<void> {},
    async planShard(input) {
      return { credits: new Array<number>(input.count).fill(1) };
    },
    async submitItem(input: SubmitItemInput) {
      const refusal = refusals.find((candidate) => candidate.left > 0);
      if (refusal) {
        refusal.left--;
        throw ApplicationFailure.create({ type: refusal.type, message: refusal.message, nonRetryable: true });
      }
      await scenario.holdSubmit?.(input.index, api);
      api.timeline.push({ event: 'submit', index: input.index, attempt: input.attempt });
      const taskId = `task-${input.index}-${input.attempt}`;
      // Idempotent, as a provider with idempotency keys is: an attempt of this call that runs late
      // (Temporal timed it out and retried it; under load a worker can start it after the retry
      // finished) finds its task, and must not bring a task that was collected back to life.
      if (!tasks.has(taskId))
        tasks.set(taskId, { index: input.index, attempt: input.attempt, lookups: 0, done: false });
      api.maxConcurrentAtApi = Math.max(api.maxConcurrentAtApi, atApi());
      return { taskId };
    },
    submitSlice,
    async lookupTasks(input: LookupTasksInput) {
      api.lookups++;
      return {
        statuses: input.taskIds.map((id) => {
          const task = tasks.get(id);
          if (!task) return 'not_found';
          task.lookups++;
          if (task.lookups < lookupsToFinish(task.index)) return 'processing';
          return scenario.fails?.(task.index, task.attempt) ? 'failed' : 'completed';
        }),
      };
    },
    fetchTask,
    async collectResults(input: CollectResultsInput): Promise<CollectResultsOutput> {
      if (scenario.collectFails)
        throw ApplicationFailure.nonRetryable('the store refused the write', 'StorageAccessDeniedError');
      if (scenario.collectMs) await new Promise((resolve) => setTimeout(resolve, scenario.collectMs));
      let calls = 0;
      const items: CollectResultsOutput['items'] = [];
      for (const request of input.items) {
        if (!request.known) calls++;
        if (!request.known && scenario.collectGetFails?.(request.index)) {
          items.push({ index: request.index });
          continue;
        }
        const result = request.known ?? (await getTask({ plan: input.plan, taskId: request.taskId }));
        const toStore = storeRequestOf(request, result);
        const stored = toStore && (await storeResults({ ...input, items: [toStore] })).items[0];
        items.push({ index: request.index, result, ...(stored ? { stored } : {}) });
      }
      return { items, calls };
    },
    storeResults,
    async recordOutcomes(input: RecordOutcomesInput) {
      if (scenario.recordFails?.(input.shard))
        throw ApplicationFailure.nonRetryable('the outcome file cannot be written', 'StorageError');
      api.outcomes.push(...input.outcomes);
    },
    async writeReport(_input: WriteReportInput) {
      const counts = {
        ...zeroCounts(),
        completed: api.stored.length,
      };
      for (const outcome of api.outcomes) counts[outcome.status]++;
      return {
        counts,
        images: api.stored.length,
        creditsSpent: api.stored.length,
        reportFile: 'report.jsonl',
        summaryFile: 'summary.json',
      };
    },
  };
  return api;
}
