// OpenAI in a manifest: validate's problems at file:line:col (a size the Images API cannot make,
// api.mode on a provider with one way of submitting), the mode chosen by item count, and `plan`'s
// line with the price at Batch and at sync rates.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describePlan, planCatalog, planJson } from '../client/catalog-plan.js';
import { loadManifest } from '../manifest/load.js';
import { problemsOf } from './support/manifest-problems.js';

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
