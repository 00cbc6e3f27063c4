// writeReport's public contract (issue #3, section 5) from outcome files written by
// recordOutcomes and storeResults: exactly the documented fields, manifest order, the last line
// of an item winning, items never run reported as cancelled, torn lines ignored.
import { appendFileSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { applicationFailure, writeManifest } from './activities-fixture.js';
import { frozenPlan } from './support/plan.js';

const REPORT_FIELDS = ['id', 'status', 'task_id', 'attempts', 'credits_cost', 'images', 'error'];

async function fiveItems() {
  const fixture = writeManifest([
    'name: lamps',
    'output: ./out',
    'items:',
    ...['a', 'b', 'c', 'd', 'e'].map((id) => `  - { id: ${id}, prompt: lamp ${id} }`),
  ]);
  let now = Date.UTC(2026, 4, 1, 12, 0, 0);
  const activities = createActivities({ now: () => now });
  const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
  const outcomes = join(plan.stateDir, `outcomes-${fixture.hash.slice(0, 16)}`);
  return { fixture, activities, plan, outcomes, tick: (ms: number) => (now += ms) };
}

const image = {
  path: 'a_0.png',
  sha256: 'ab'.repeat(32),
  bytes: 1234,
  source_url: 'http://results.test/t/0.png',
};
const partial = {
  path: 'c_0.png',
  sha256: 'cd'.repeat(32),
  bytes: 99,
  source_url: 'http://results.test/c/0.png',
};

describe('writeReport', () => {
  it('writes one line per item in manifest order with exactly the contract fields', async () => {
    const { fixture, activities, plan, outcomes } = await fiveItems();
    // What storeResults appends for a stored item (shard 1 = index 0).
    mkdirSync(outcomes, { recursive: true });
    appendFileSync(
      join(outcomes, 'shard-0001.jsonl'),
      [
        {
          index: 0,
          id: 'a',
          status: 'completed',
          task_id: 'task_A',
          attempts: 2,
          credits_cost: 1,
          images: [image],
          error: null,
        },
        // storeResults stored one of c's two images before the other URL expired.
        {
          index: 2,
          id: 'c',
          status: 'expired',
          task_id: 'task_C',
          attempts: 1,
          credits_cost: 2,
          images: [partial],
          error: null,
        },
      ]
        .map((line) => `${JSON.stringify(line)}\n`)
        .join(''),
    );
    const generationFailed = { type: 'generation_error', code: 'generation_failed', message: 'it broke' };
    await activities.recordOutcomes({
      plan,
      shard: 0,
      outcomes: [
        {
          index: 1,
          status: 'failed',
          taskId: 'task_B',
          attempts: 1,
          creditsCost: 0,
          error: generationFailed,
        },
        {
          index: 2,
          status: 'expired',
          taskId: 'task_C',
          attempts: 1,
          creditsCost: 1,
          error: { type: 'ResultExpired', code: 'result_expired', message: 'gone' },
        },
      ],
    });
    // A later line for the same item wins.
    await activities.recordOutcomes({
      plan,
      shard: 0,
      outcomes: [
        {
          index: 1,
          status: 'failed',
          taskId: 'task_B2',
          attempts: 3,
          creditsCost: 0,
          error: generationFailed,
        },
      ],
    });
    // Another shard's file; then a torn last line (a writer killed mid-append) for item e.
    await activities.recordOutcomes({
      plan,
      shard: 1,
      outcomes: [
        {
          index: 3,
          status: 'skipped',
          taskId: null,
          attempts: 0,
          creditsCost: 0,
          error: { type: 'BudgetExhausted', code: 'budget_exhausted', message: 'over budget' },
        },
      ],
    });
    appendFileSync(join(outcomes, 'shard-0002.jsonl'), '{"index":4,"id":"e","status":"comp');

    const result = await activities.writeReport({
      plan,
      runId: 'pixelmill/lamps',
      emulated: true,
      startedAt: '2026-05-01T11:00:00.000Z',
      apiCalls: { submit: 5, lookup: 7, get: 3 },
    });

    const lines = readFileSync(join(fixture.outputDir, 'report.jsonl'), 'utf8').trimEnd().split('\n');
    const report = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    for (const line of report) expect(Object.keys(line)).toEqual(REPORT_FIELDS);
    expect(report).toEqual([
      {
        id: 'a',
        status: 'completed',
        task_id: 'task_A',
        attempts: 2,
        credits_cost: 1,
        images: [image],
        error: null,
      },
      {
        id: 'b',
        status: 'failed',
        task_id: 'task_B2',
        attempts: 3,
        credits_cost: 0,
        images: [],
        error: generationFailed,
      },
      {
        id: 'c',
        status: 'expired',
        task_id: 'task_C',
        attempts: 1,
        credits_cost: 1,
        images: [partial],
        error: { type: 'ResultExpired', code: 'result_expired', message: 'gone' },
      },
      {
        id: 'd',
        status: 'skipped',
        task_id: null,
        attempts: 0,
        credits_cost: 0,
        images: [],
        error: { type: 'BudgetExhausted', code: 'budget_exhausted', message: 'over budget' },
      },
      {
        id: 'e',
        status: 'cancelled',
        task_id: null,
        attempts: 0,
        credits_cost: 0,
        images: [],
        error: {
          type: 'NotRun',
          code: 'not_run',
          message:
            'the run ended before this item was finished: it was not submitted, or its task was not collected',
        },
      },
    ]);

    const summary = JSON.parse(readFileSync(join(fixture.outputDir, 'summary.json'), 'utf8')) as unknown;
    expect(summary).toEqual({
      manifest: 'lamps',
      // The provider the plan names (plans without one ran on the first API).
      provider: 'apimart',
      run_id: 'pixelmill/lamps',
      items: 5,
      counts: { completed: 1, failed: 1, cancelled: 1, expired: 1, skipped: 1 },
      // Why the four did not complete, by their error's code.
      not_completed_by_code: {
        [generationFailed.code]: 1,
        result_expired: 1,
        budget_exhausted: 1,
        not_run: 1,
      },
      tasks_given_up: 0,
      checks: { failed: {}, tasks_regenerated: 0 },
      images: 2,
      credits_charged: 2,
      api_calls: { submit: 5, lookup: 7, get: 3 },
      started_at: '2026-05-01T11:00:00.000Z',
      finished_at: '2026-05-01T12:00:00.000Z',
      emulated: true,
      // The output's first catalog run: its one completed item is the catalog's first result.
      catalog: {
        basis: null,
        generated: 1,
        reused: 0,
        restored: 0,
        moved: 0,
        regenerated: 0,
        removed: 0,
        removed_ids: [],
        pruned: false,
      },
    });
    expect(result).toEqual({
      counts: {
        queued: 0,
        submitted: 0,
        processing: 0,
        storing: 0,
        completed: 1,
        failed: 1,
        cancelled: 1,
        expired: 1,
        skipped: 1,
      },
      images: 2,
      creditsSpent: 2,
      reportFile: join(fixture.outputDir, 'report.jsonl'),
      summaryFile: join(fixture.outputDir, 'summary.json'),
      galleryFile: join(fixture.outputDir, 'index.html'),
      // What did not complete, grouped, largest first, with the first ids: the end of `run`.
      notCompleted: [
        { status: 'failed', type: 'generation_error', code: 'generation_failed', count: 1, ids: ['b'] },
        { status: 'expired', type: 'ResultExpired', code: 'result_expired', count: 1, ids: ['c'] },
        { status: 'skipped', type: 'BudgetExhausted', code: 'budget_exhausted', count: 1, ids: ['d'] },
        { status: 'cancelled', type: expect.any(String), code: 'not_run', count: 1, ids: ['e'] },
      ],
    });
    // Written via temp files and renames: nothing else is left in the output directory.
    expect(readdirSync(fixture.outputDir).sort()).toEqual([
      '.pixelmill',
      'index.html',
      'report.jsonl',
      'summary.json',
    ]);
  });

  it('keeps lines appended after a torn line readable', async () => {
    const { fixture, activities, plan, outcomes } = await fiveItems();
    mkdirSync(outcomes, { recursive: true });
    appendFileSync(join(outcomes, 'shard-0001.jsonl'), '{"index":0,"id":"a","sta');
    await activities.recordOutcomes({
      plan,
      shard: 0,
      outcomes: [{ index: 0, status: 'failed', taskId: 'task_A', attempts: 1, creditsCost: 0, error: null }],
    });
    await activities.writeReport({
      plan,
      runId: 'r',
      emulated: false,
      startedAt: 'x',
      apiCalls: { submit: 0, lookup: 0, get: 0 },
    });
    const first = JSON.parse(
      readFileSync(join(fixture.outputDir, 'report.jsonl'), 'utf8').split('\n')[0]!,
    ) as unknown;
    expect(first).toMatchObject({ id: 'a', status: 'failed', task_id: 'task_A' });
  });

  it('reports every item cancelled when nothing ran, and rejects an index outside the plan', async () => {
    const { fixture, activities, plan } = await fiveItems();
    const result = await activities.writeReport({
      plan,
      runId: 'r',
      emulated: false,
      startedAt: 'x',
      apiCalls: { submit: 0, lookup: 0, get: 0 },
    });
    expect(result.counts.cancelled).toBe(5);
    expect(readFileSync(join(fixture.outputDir, 'report.jsonl'), 'utf8').trimEnd().split('\n')).toHaveLength(
      5,
    );

    const failure = await applicationFailure(
      activities.recordOutcomes({
        plan,
        shard: 0,
        outcomes: [{ index: 5, status: 'failed', taskId: null, attempts: 0, creditsCost: 0, error: null }],
      }),
    );
    expect(failure.type).toBe('PlanIndexOutOfRange');
    expect(failure.nonRetryable).toBe(true);
  });
});
