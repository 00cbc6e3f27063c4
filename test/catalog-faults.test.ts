// Issue #3 section 6: catalog runs against a misbehaving API, end to end on a real Temporal dev
// server with pixelmill's workers in this process and one emulator per scenario (over HTTP, on a
// compressed clock): a 429 storm, failed generations resubmitted by policy, results that expire
// before they are stored, pause/resume and cancel of a live run, and a budget stop. The emulator's
// ground truth (every task it acknowledged) is what each scenario audits the report against.
//
// The scenarios run side by side, each against its own emulator with workers of its own API
// account (so that what one worker concludes about its API, activities/api-evidence.ts, is that
// API's alone): most of each is waiting (an outage, task timeouts, retry intervals), so the file
// takes about as long as its longest scenario (the outage).
import { join } from 'node:path';
import { beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { apiAccountId } from '../common/api-account.js';
import { exitCodeOf } from '../client/runs.js';
import {
  cancelSignal,
  pauseSignal,
  resumeSignal,
  runProgressQuery,
  shardProgressQuery,
  shardWorkflowId,
} from '../common/names.js';
import type { RunResult } from '../common/types.js';
import { DEMO_API_KEY, type EmulatorConfigOverrides, type RunningEmulator } from '../emulator/index.js';
import { groundTruth, readReport, readSummary, submissionsByPrompt } from '../bench/catalog-audit.js';
import {
  FAST_EMULATOR,
  startInProcessWorkers,
  startRun,
  startTemporalHarness,
  writeCatalog,
  type CatalogHarness,
  type CatalogItem,
  type Catalog,
  type CatalogOptions,
} from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';
import { startTestEmulator } from './support/emulator.js';
import { MIN_SUBMIT_TRIES, triesToRefuse } from '../activities/api-evidence.js';

let harness: Omit<CatalogHarness, 'emulator'>;
beforeAll(async () => {
  harness = await startTemporalHarness();
});

function items(count: number, prompt: (i: number) => string = (i) => `faults product ${i}`): CatalogItem[] {
  return Array.from({ length: count }, (_, i) => ({ id: `p${i}`, prompt: prompt(i) }));
}

/**
 * An emulator with `config` (closed when the test ends) and workers of its own API account; `start`
 * starts a catalog's run on that account's queues.
 */
async function apiOfItsOwn(ctx: TestContext, config: EmulatorConfigOverrides) {
  const emulator = await startTestEmulator(config, { onTestFinished: ctx.onTestFinished });
  const apiAccount = apiAccountId(emulator.url, DEMO_API_KEY);
  await startInProcessWorkers(harness.env, undefined, apiAccount);
  return {
    emulator,
    start: (catalog: Catalog) => startRun(harness.env.client, catalog, undefined, { apiAccount }),
  };
}

/** An emulator with `config` over FAST_EMULATOR, its workers, and a catalog pointed at it. */
async function scenario(
  ctx: TestContext,
  config: EmulatorConfigOverrides,
  catalog: Omit<CatalogOptions, 'baseUrl'>,
): Promise<{ emulator: RunningEmulator; catalog: Catalog; start: () => ReturnType<typeof startRun> }> {
  const { emulator, start } = await apiOfItsOwn(ctx, {
    ...FAST_EMULATOR,
    ...config,
    rate_limits: { ...FAST_EMULATOR.rate_limits, ...config.rate_limits },
  });
  const written = writeCatalog(harness.dir, { ...catalog, baseUrl: emulator.url });
  return { emulator, catalog: written, start: () => start(written) };
}

describe.concurrent('catalog runs against a misbehaving API', () => {
  it('a 429 storm: every item stored, each prompt submitted once, the 429s really answered', async (ctx) => {
    const { emulator, catalog, start } = await scenario(
      ctx,
      { rate_limits: { submit: { per_second: 20, burst: 5 }, query: { per_second: 20, burst: 5 } } },
      { name: 'storm', items: items(100), requestsPerSecond: 500 },
    );
    const handle = await start();
    const result = (await handle.result()) as RunResult;

    const tooMany = Object.values(emulator.stats().requests).reduce(
      (sum, byStatus) => sum + (byStatus['429'] ?? 0),
      0,
    );
    console.log(`429 storm: ${tooMany} requests answered 429`);
    expect(tooMany).toBeGreaterThan(20);
    expect(result.counts).toMatchObject({ completed: 100, failed: 0, expired: 0, cancelled: 0, skipped: 0 });
    const report = readReport(catalog);
    expect(report.filter((line) => line.status !== 'completed')).toEqual([]);
    // A 429 has no effect at the API: retries after Retry-After never doubled a task.
    const byPrompt = submissionsByPrompt(await groundTruth(emulator));
    expect(byPrompt.size).toBe(100);
    expect([...byPrompt.values()].every((count) => count === 1)).toBe(true);
  });

  it('failed generations are resubmitted by the retry policy; blocked prompts are reported once', async (ctx) => {
    const blocked = (i: number) => i % 10 === 3;
    const { emulator, catalog, start } = await scenario(
      ctx,
      { generation: { failure_rate: 0.5, blocked_words: ['forbidden'] } },
      {
        name: 'failures',
        items: items(100, (i) => (blocked(i) ? `forbidden product ${i}` : `faults product ${i}`)),
        // The emulator's random failure is type generation_error, code generation_failed: name the code.
        retry: { maxAttempts: 3, on: ['generation_failed'] },
      },
    );
    const result = (await (await start()).result()) as RunResult;
    const report = readReport(catalog);
    const tasks = await groundTruth(emulator);
    const byPrompt = submissionsByPrompt(tasks);

    for (const [i, line] of report.entries()) {
      const prompt = blocked(i) ? `forbidden product ${i}` : `faults product ${i}`;
      const submitted = tasks.filter((task) => task.prompt === prompt);
      // Without crashes every attempt is exactly one task at the API.
      expect(submitted.length, line.id).toBe(line.attempts);
      if (blocked(i)) {
        expect(line).toMatchObject({ status: 'failed', attempts: 1, credits_cost: 0, images: [] });
        expect(line.error).toMatchObject({ type: 'content_policy_violation', code: 'content_blocked' });
        continue;
      }
      // Every attempt but the last failed at the API.
      expect(submitted.slice(0, -1).every((task) => task.status === 'failed')).toBe(true);
      if (line.status === 'completed') {
        expect(line.attempts).toBeGreaterThanOrEqual(1);
        expect(line.attempts).toBeLessThanOrEqual(3);
        expect(line.task_id).toBe(submitted.at(-1)?.id);
      } else {
        expect(line).toMatchObject({ status: 'failed', attempts: 3, credits_cost: 0 });
        expect(line.error).toMatchObject({ type: 'generation_error', code: 'generation_failed' });
        expect(submitted.every((task) => task.status === 'failed')).toBe(true);
      }
    }
    const resubmitted = [...byPrompt.values()].filter((count) => count > 1).length;
    const exhausted = report.filter((line) => line.status === 'failed' && line.attempts === 3).length;
    console.log(`failures: ${tasks.length} tasks, ${resubmitted} prompts resubmitted, ${exhausted} gave up`);
    expect(resubmitted).toBeGreaterThan(0);
    expect(exhausted).toBeGreaterThan(0);
    expect(result.counts.failed).toBe(10 + exhausted);
    expect(result.counts.completed).toBe(90 - exhausted);
    expect(exitCodeOf(result)).toBe(3);
  });

  it('a submit the API keeps refusing fails its item within the bound; the others complete', async (ctx) => {
    const { emulator, catalog, start } = await scenario(
      ctx,
      { faults: { poisoned_prompt_words: ['unbuildable'] } },
      {
        name: 'poisoned',
        // Enough others that a handful of their acceptances prove the API well: the minimum bound.
        items: items(30, (i) => (i === 3 ? `an unbuildable product ${i}` : `faults product ${i}`)),
      },
    );
    const started = Date.now();
    const result = (await (await start()).result()) as RunResult;
    const report = readReport(catalog);
    expect(result.counts).toMatchObject({ completed: 29, failed: 1 });
    expect(exitCodeOf(result)).toBe(3);
    const poisoned = report[3]!;
    expect(poisoned).toMatchObject({ status: 'failed', task_id: null, credits_cost: 0, images: [] });
    expect(poisoned.error).toMatchObject({ type: 'SubmitRefused', code: 'build_request_failed' });
    const evidence =
      /failed with 500 build_request_failed: .*\(the same answer (\d+) times in \d+ s, while the API accepted (\d+) other submits and failed (\d+)\)$/.exec(
        poisoned.error?.message ?? '',
      );
    expect(evidence, poisoned.error?.message).not.toBeNull();
    const [tries, accepted, failed] = evidence!.slice(1).map(Number) as [number, number, number];
    // Tried exactly the rule's bound for what the other submits saw, and never accepted: nothing
    // was created or charged for it. Others were accepted, and nothing else failed.
    expect(failed).toBe(0);
    expect(accepted).toBeGreaterThanOrEqual(1);
    expect(accepted).toBeLessThanOrEqual(29);
    expect(tries).toBe(triesToRefuse(accepted, failed));
    expect(tries).toBeGreaterThanOrEqual(MIN_SUBMIT_TRIES);
    expect(emulator.injectedFaults().poisoned_submit).toBe(tries);
    expect((await groundTruth(emulator)).some((task) => task.prompt.includes('unbuildable'))).toBe(false);
    console.log(`poisoned: refused after ${tries} tries; the run ended after ${Date.now() - started} ms`);
  }, 150_000);

  it('an outage of the whole API fails no item: the run waits, then completes', async (ctx) => {
    // Tasks survive the emulator's restart in its journal, on the same port.
    const config = { ...FAST_EMULATOR, state_file: join(harness.dir, 'outage-tasks.jsonl') };
    const { emulator: first, start } = await apiOfItsOwn(ctx, config);
    const port = Number(new URL(first.url).port);
    const catalog = writeCatalog(harness.dir, {
      name: 'outage',
      items: items(30, (i) => `outage product ${i}`),
      baseUrl: first.url,
      // Slow enough that most submits are still to come when the API goes down (2.5 s of them).
      requestsPerSecond: 10,
    });
    const handle = await start(catalog);
    await waitUntil('some tasks accepted', async () => (await groundTruth(first)).length >= 5);
    await first.close();
    // Down longer than a refused submit takes to fail its item (about 15 s): an outage must not.
    await new Promise((resolve) => setTimeout(resolve, 20_000));
    await startTestEmulator({ ...config, port }, { onTestFinished: ctx.onTestFinished });
    const result = (await handle.result()) as RunResult;
    expect(result.counts).toMatchObject({ completed: 30, failed: 0 });
    expect(readReport(catalog).every((line) => line.status === 'completed')).toBe(true);
  }, 120_000);

  it('a task the provider never finishes is given up after limits.task_timeout, resubmitted, then failed', async (ctx) => {
    const { emulator, catalog, start } = await scenario(
      ctx,
      { faults: { stuck_task_rate: 1 } },
      {
        name: 'stuck',
        items: items(3),
        taskTimeout: '10s',
        retry: { maxAttempts: 2, on: ['task_timeout'] },
      },
    );
    const result = (await (await start()).result()) as RunResult;
    expect(result.counts).toMatchObject({ completed: 0, failed: 3 });
    // Every task was given up: the first of each item (resubmitted), then the second.
    expect(readSummary(catalog)).toMatchObject({
      tasks_given_up: 6,
      not_completed_by_code: { task_timeout: 3 },
    });
    const tasks = await groundTruth(emulator);
    for (const line of readReport(catalog)) {
      const mine = tasks.filter((task) => task.prompt === `faults product ${line.id.slice(1)}`);
      // Two tasks each, both still processing at the API: the second is the report's.
      expect(mine.map((task) => task.status)).toEqual(['processing', 'processing']);
      expect(line).toMatchObject({ status: 'failed', attempts: 2, task_id: mine[1]!.id, credits_cost: 0 });
      expect(line.error).toMatchObject({ type: 'TaskTimedOut', code: 'task_timeout' });
      expect(line.error?.message).toContain(`task ${mine[1]!.id} after 10 s (limits.task_timeout)`);
    }
  }, 90_000);

  it('images the checks reject are generated again, and the Temporal UI details say how many', async (ctx) => {
    // Half the tasks rejected: among 20 items none is one run in a million (among 6, one in 64),
    // and an item still rejected after 20 attempts one in a million.
    const { emulator, start } = await scenario(
      ctx,
      { faults: { wrong_aspect_image_rate: 0.5 } },
      { name: 'rejected', items: items(20), retry: { maxAttempts: 20, on: ['ImageCheckFailed'] } },
    );
    const handle = await start();
    const result = (await handle.result()) as RunResult;
    expect(result.counts).toMatchObject({ completed: 20, failed: 0 });
    const rejected = emulator.injectedFaults().wrong_aspect_image!;
    expect(rejected).toBeGreaterThan(0);
    const tasks = rejected === 1 ? '1 task' : `${rejected} tasks`;
    const metadata = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(metadata.currentDetails).toContain(
      `The checks rejected the images of ${tasks}, whose items were generated again.`,
    );
    const shard = harness.env.client.workflow.getHandle(shardWorkflowId(handle.workflowId, 0));
    const shardMetadata = (await shard.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(shardMetadata.currentDetails).toContain(`${tasks} with images rejected by the checks`);
  }, 90_000);

  it('a result that expires before it is stored is generated again by the retry policy, then reported expired; the run still finishes', async (ctx) => {
    // Real-time clock with short generations; each image downloads in about 2 s (27 KB at 100
    // kbps) while results live 3-4 s. A task's result is read just before its images are
    // downloaded, one after the other: an item's first image is stored, its third finds the URL
    // gone (and tasks whose turn comes late are found expired by their GET).
    const { emulator, catalog, start } = await scenario(
      ctx,
      {
        time_scale: 1,
        generation: {
          queue_seconds: [0.05, 0.05],
          seconds: { '1K': [0.2, 0.2], '2K': [0.2, 0.2], '4K': [0.2, 0.2] },
        },
        result_ttl_seconds: 3,
        faults: { slow_download_kbps: 100 },
      },
      { name: 'expiry', items: items(12).map((item) => ({ ...item, n: 3 })) },
    );
    const result = (await (await start()).result()) as RunResult;
    const report = readReport(catalog);
    const expired = report.filter((line) => line.status === 'expired');
    console.log(
      'expiry:',
      report.map((line) => `${line.id} ${line.status} ${line.error?.code ?? ''}`),
    );
    expect(expired.length).toBeGreaterThan(0);
    for (const line of expired) {
      expect(['result_expired', 'task_expired']).toContain(line.error?.code);
      expect(line.error?.message).toMatch(/expired/);
      expect(line.task_id).toMatch(/^task_/);
      // The default retry policy names both expiries: generated again until its attempts ran out.
      expect(line.attempts).toBe(3);
    }
    // The download path itself: completed at the API, URL gone before the bytes were stored.
    expect(expired.some((line) => line.error?.type === 'ResultExpired')).toBe(true);
    expect(report.every((line) => line.status === 'completed' || line.status === 'expired')).toBe(true);
    expect(result.counts.expired).toBe(expired.length);
    expect(readSummary(catalog).counts.expired).toBe(expired.length);
    expect(exitCodeOf(result)).toBe(3);
    // Each expired item was submitted three times; no completed one more than it says.
    const submitted = report.reduce((sum, line) => sum + line.attempts, 0);
    expect((await groundTruth(emulator)).length).toBe(submitted);
    expect(submitted).toBeGreaterThanOrEqual(12 + 2 * expired.length);
  });

  it('pause stops submitting, resume continues, cancel collects what is in flight and submits nothing new', async (ctx) => {
    const maxInFlight = 10;
    const { emulator, catalog, start } = await scenario(
      ctx,
      { time_scale: 0.02 }, // about 1 s per task
      { name: 'control', items: items(200), maxInFlight },
    );
    const handle = await start();
    const shard = harness.env.client.workflow.getHandle(shardWorkflowId(catalog.runId, 0));
    const tasksNow = async () => (await groundTruth(emulator)).length;

    await waitUntil('20 tasks at the API', async () => (await tasksNow()) >= 20);
    await waitUntil(
      'a lookup to report items being generated',
      async () => (await shard.query(shardProgressQuery)).counts.processing > 0,
    );
    await handle.signal(pauseSignal);
    await waitUntil(
      'the run to say paused',
      async () => (await handle.query(runProgressQuery)).state === 'paused',
    );
    // Once nothing is at the API any more, a paused shard submits nothing.
    await waitUntil('the paused shard to drain', async () => {
      const { counts, paused } = await shard.query(shardProgressQuery);
      return paused && counts.submitted + counts.processing + counts.storing === 0;
    });
    const whilePaused = await tasksNow();
    const queued = (await shard.query(shardProgressQuery)).counts.queued;
    expect(queued).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await tasksNow()).toBe(whilePaused);
    expect((await shard.query(shardProgressQuery)).counts.queued).toBe(queued);

    await handle.signal(resumeSignal);
    await waitUntil(
      'the run to say running',
      async () => (await handle.query(runProgressQuery)).state === 'running',
    );
    await waitUntil('submitting to resume', async () => (await tasksNow()) >= whilePaused + 20);
    await handle.signal(cancelSignal);
    const atCancel = await tasksNow();
    const result = (await handle.result()) as RunResult;

    const tasks = await groundTruth(emulator);
    expect(tasks.length).toBeLessThanOrEqual(atCancel + maxInFlight);
    expect(tasks.length).toBeLessThan(200);
    const report = readReport(catalog);
    const completed = report.filter((line) => line.status === 'completed');
    const cancelled = report.filter((line) => line.status === 'cancelled');
    // What reached the API was collected (each once); what did not was cancelled, never submitted.
    expect(completed.length + cancelled.length).toBe(200);
    expect(new Set(completed.map((line) => line.task_id))).toEqual(new Set(tasks.map((task) => task.id)));
    expect(submissionsByPrompt(tasks).size).toBe(tasks.length);
    for (const line of cancelled) {
      expect(line).toMatchObject({ task_id: null, attempts: 0, images: [] });
      expect(line.error).toMatchObject({ type: 'Cancelled', code: 'cancelled' });
      expect(line.error?.message).toMatch(/cancelled/);
    }
    expect(result.counts).toMatchObject({ completed: completed.length, cancelled: cancelled.length });
    expect(exitCodeOf(result)).toBe(3);
  });

  it('a budget smaller than the catalog: nothing submitted beyond it, the rest skipped with the reason', async (ctx) => {
    const budget = 40;
    const { emulator, catalog, start } = await scenario(
      ctx,
      {},
      { name: 'budget', items: items(100), budgetCredits: budget }, // 1 credit per 1K image
    );
    const result = (await (await start()).result()) as RunResult;
    const stats = emulator.stats();
    expect(stats.credits_charged).toBeLessThanOrEqual(budget);
    expect(stats.credits_charged).toBeGreaterThan(0);
    const report = readReport(catalog);
    const completed = report.filter((line) => line.status === 'completed');
    const skipped = report.filter((line) => line.status === 'skipped');
    expect(completed.length + skipped.length).toBe(100);
    expect(stats.tasks_total).toBe(completed.length);
    expect(skipped.length).toBeGreaterThanOrEqual(100 - budget);
    for (const line of skipped) {
      expect(line).toMatchObject({ task_id: null, attempts: 0 });
      expect(line.error).toMatchObject({ type: 'BudgetExhausted', code: 'budget_exhausted' });
      expect(line.error?.message).toMatch(/budget_credits/);
    }
    const summary = readSummary(catalog);
    expect(summary.counts).toMatchObject({ completed: completed.length, skipped: skipped.length });
    expect(summary.credits_charged).toBe(stats.credits_charged);
    expect(result.counts.skipped).toBe(skipped.length);
  });
});
