// OpenAI in a manifest: validate's problems at file:line:col (a size the Images API cannot make,
// api.mode on a provider with one way of submitting, a budget that is not an amount of dollars),
// the mode chosen by item count, `plan`'s line with the price at Batch and at sync rates, and the
// one per-item estimate (model, size, quality, n, mode) that plan, the budget and the shards use.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { describePlan, planCatalog, planJson } from '../client/catalog-plan.js';
import { loadManifest } from '../manifest/load.js';
import { estimatedCredits, planMeta } from '../runstate/plan.js';
import { problemsOf } from './support/manifest-problems.js';
import { frozenPlan } from './support/plan.js';

const dir = mkdtempSync(join(tmpdir(), 'pixelmill-openai-manifest-'));

function manifest(name: string, api: string, count: number, item = ''): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      `api: { ${api} }`,
      `output: ./${name}-out`,
      'items:',
      ...Array.from({ length: count }, (_, i) => `  - { id: item-${i}, prompt: "a chair ${i}"${item} }`),
    ].join('\n'),
  );
  return file;
}

describe('OpenAI in a manifest', () => {
  it('refuses what the Images API cannot make at the line of the item', () => {
    const problems = problemsOf(
      manifest('bad-size', 'provider: openai', 2, ', size: "16:9", resolution: 2K'),
    );
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/bad-size\.yaml:5:\d+ items\[0\]\.size: OpenAI's Images API makes 1:1/),
        expect.stringMatching(/bad-size\.yaml:5:\d+ items\[0\]\.resolution: .*2K is not available/),
      ]),
    );
  });

  it('refuses api.mode on a provider with one way of submitting', () => {
    const problems = problemsOf(manifest('fal-mode', 'provider: fal, mode: batch', 1));
    expect(problems).toEqual([
      expect.stringMatching(/fal-mode\.yaml:2:\d+ api\.mode: fal has one way of submitting/),
    ]);
  });

  it('takes batch mode for a run of more than 50 items, sync for fewer, and says why', () => {
    const big = loadManifest(manifest('big', 'provider: openai', 60));
    expect(big.settings).toMatchObject({
      apiMode: 'batch',
      apiModeReason: expect.stringMatching(/60 items, over 50/),
    });
    // A batch waits up to its 24 h window, not a task's 30 minutes.
    expect(big.settings.taskTimeoutMs).toBeGreaterThan(24 * 3_600_000);
    const small = loadManifest(manifest('small', 'provider: openai', 3));
    expect(small.settings).toMatchObject({ apiMode: 'sync' });
    const forced = loadManifest(manifest('forced', 'provider: openai, mode: batch, poll_interval: 2m', 3));
    expect(forced.settings).toMatchObject({ apiMode: 'batch', batchPollMs: 120_000 });
  });

  it('plan shows the mode and the price at Batch and at sync rates', async () => {
    const loaded = loadManifest(manifest('priced', 'provider: openai', 60));
    const plan = await planCatalog(loaded, { prune: false });
    const line = describePlan(plan, false);
    // 60 medium squares of gpt-image-1.5: $0.034 each, half in Batch.
    expect(line).toContain('mode batch (60 items, over 50');
    expect(line).toContain('$1.02 at batch prices, $2.04 at sync prices');
    expect(planJson(plan, false).mode).toEqual({
      mode: 'batch',
      reason: expect.any(String),
      prices_usd: { batch: 1.02, sync: 2.04 },
    });
  });
});

/** A batch catalog of `count` items whose defaults and limits are the given YAML flows. */
function batchCatalog(name: string, count: number, lines: string[] = [], item = ''): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      `name: ${name}`,
      'api: { provider: openai, mode: batch }',
      ...lines,
      `output: ./${name}-out`,
      'items:',
      ...Array.from({ length: count }, (_, i) => `  - { id: item-${i}, prompt: "a chair ${i}"${item} }`),
    ].join('\n'),
  );
  return file;
}

describe('what an OpenAI item is expected to cost', () => {
  it('prices each item by its size, quality and n, at Batch or sync rates', () => {
    const file = batchCatalog('mixed', 0, [], '');
    writeFileSync(
      file,
      [
        'name: mixed',
        'api: { provider: openai, mode: batch }',
        'output: ./mixed-out',
        'items:',
        '  - { id: high, prompt: a, params: { quality: high } }',
        '  - { id: low, prompt: b, params: { quality: low } }',
        '  - { id: wide, prompt: c, size: "3:2", n: 2 }',
        '  - { id: mini, prompt: d, model: gpt-image-1-mini, params: { quality: high } }',
      ].join('\n'),
    );
    const { settings, items } = loadManifest(file);
    // gpt-image-1.5: square high $0.133, low $0.009, 3:2 medium $0.05; mini square high $0.036; Batch half.
    expect(items.map((item) => estimatedCredits(item, settings))).toEqual([0.0665, 0.0045, 0.05, 0.018]);
    const sync = { ...settings, apiMode: 'sync' as const };
    expect(items.map((item) => estimatedCredits(item, sync))).toEqual([0.133, 0.009, 0.1, 0.036]);
    expect(planMeta(settings, items, 'h').shardCredits?.[0]).toBeCloseTo(0.0665 + 0.0045 + 0.05 + 0.018, 9);
  });

  it('plan counts a high-quality catalog at its own price, not at medium', async () => {
    const plan = await planCatalog(
      loadManifest(batchCatalog('high', 60, ['defaults: { params: { quality: high } }'])),
      { prune: false },
    );
    // 60 high-quality squares: $0.133 each, $0.0665 in Batch (medium would be $0.017).
    expect(plan.estimate.credits).toBeCloseTo(60 * 0.0665, 6);
    expect(plan.mode?.prices).toEqual({ batch: 3.99, sync: 7.98 });
    expect(describePlan(plan, false)).toContain('3.99 credits');
    const low = await planCatalog(
      loadManifest(batchCatalog('low', 60, ['defaults: { params: { quality: low } }'])),
      { prune: false },
    );
    expect(low.estimate.credits).toBeCloseTo(60 * 0.0045, 6);
  });

  it("takes the manifest's pricing as the list price: Batch estimated at half of it", async () => {
    const loaded = loadManifest(batchCatalog('listed', 60, ['pricing: { per_image: 0.1 }']));
    expect(estimatedCredits(loaded.items[0]!, loaded.settings)).toBe(0.05);
    const plan = await planCatalog(loaded, { prune: false });
    expect(plan.estimate.credits).toBeCloseTo(3, 6);
    expect(plan.mode?.prices).toEqual({ batch: 3, sync: 6 });
  });

  it("gives the shard's budget checks the same estimate, at sync rates for a retry in sync", async () => {
    const file = batchCatalog('budgeted', 3, [
      'defaults: { params: { quality: high } }',
      'limits: { budget_credits: 12.50 }',
    ]);
    const plan = await frozenPlan(file);
    const activities = createActivities();
    const prepared = await activities.prepareRun({ plan });
    expect(prepared.budgetCredits).toBe(12.5);
    // No poll_interval: the first status call 2 s after the create, waits growing to 10 minutes.
    expect(prepared.batch).toEqual({
      pollMs: 2_000,
      maxPollMs: 600_000,
      retryIn: 'batch',
      enqueuedImages: 5_000,
    });
    expect(prepared.shardCredits?.[0]).toBeCloseTo(3 * 0.0665, 9);
    expect((await activities.planShard({ plan, offset: 0, count: 3 })).credits).toEqual([
      0.0665, 0.0665, 0.0665,
    ]);
    expect((await activities.planShard({ plan, offset: 0, count: 3, mode: 'sync' })).credits).toEqual([
      0.133, 0.133, 0.133,
    ]);
  });
});

describe('budget_credits', () => {
  it('takes an amount with cents, and says what it wants of anything else', () => {
    expect(
      loadManifest(batchCatalog('cents', 1, ['limits: { budget_credits: 12.50 }'])).settings.budgetCredits,
    ).toBe(12.5);
    expect(problemsOf(batchCatalog('dollar-sign', 1, ['limits: { budget_credits: "$12.50" }']))).toEqual([
      expect.stringMatching(
        /dollar-sign\.yaml:3:\d+ limits\.budget_credits: must be a number, not text \(write 12\.50, without a currency sign or unit\)$/,
      ),
    ]);
    expect(problemsOf(batchCatalog('comma', 1, ['limits: { budget_credits: "12,50 USD" }']))).toEqual([
      expect.stringMatching(/limits\.budget_credits: must be a number, not text \(write 12\.50,/),
    ]);
    expect(problemsOf(batchCatalog('tenths', 1, ['limits: { budget_credits: 12.505 }']))).toEqual([
      expect.stringMatching(
        /limits\.budget_credits: must have at most two decimals \(cents\): .* US dollars for openai$/,
      ),
    ]);
    expect(problemsOf(batchCatalog('zero', 1, ['limits: { budget_credits: 0 }']))).toEqual([
      expect.stringMatching(/limits\.budget_credits: must be greater than 0$/),
    ]);
  });
});
