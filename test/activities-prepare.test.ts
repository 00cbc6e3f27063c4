// prepareRun and planShard on real manifests in temp dirs: the plan is frozen once per manifest
// hash and reused, a changed manifest is refused for good, and nothing secret lands in the plan.
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.js';
import { applicationFailure, writeManifest } from './activities-fixture.js';
import { frozenPlan } from './support/plan.js';

const SECRET = 'sk-live-never-in-a-plan';

function catalog(extra: string[] = []) {
  return writeManifest([
    'name: chairs',
    'api: { base_url: "http://127.0.0.1:9", api_key_env: CHAIRS_KEY }',
    'defaults: { resolution: 2K }',
    'limits: { requests_per_second: 7, max_in_flight: 40, budget_credits: 100 }',
    'output: { dir: ./out }',
    'items:',
    '  - { id: oak, prompt: an oak chair }',
    '  - { id: pine, prompt: a pine chair, n: 3, resolution: 4K }',
    '  - { id: birch, prompt: a birch chair, resolution: 1K }',
    ...extra,
  ]);
}

describe('prepareRun', () => {
  it('reads the plan the starter froze once, and answers the run settings', async () => {
    const fixture = catalog();
    const activities = createActivities({ env: { CHAIRS_KEY: SECRET } });
    const prepared = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });

    const stateDir = join(fixture.outputDir, '.pixelmill');
    expect(prepared).toMatchObject({
      plan: { stateDir, planHash: fixture.hash },
      name: 'chairs',
      itemCount: 3,
      imageCount: 5,
      outputDir: fixture.outputDir,
      requestsPerSecond: 7,
      maxInFlight: 40,
      budgetCredits: 100,
      creditsPerImage: { '1K': 1, '2K': 2, '4K': 4 },
      retry: { maxAttempts: 3, on: ['generation_error', 'task_timeout', 'result_expired', 'task_expired'] },
      taskTimeoutMs: 30 * 60_000,
      // 2K x1 + 4K x3 + 1K x1
      shardCredits: [2 + 12 + 1],
    });

    const stem = join(stateDir, `plan-${fixture.hash.slice(0, 16)}`);
    const lines = readFileSync(`${stem}.jsonl`, 'utf8').trimEnd().split('\n');
    expect(lines.map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(['oak', 'pine', 'birch']);
    expect(JSON.parse(lines[1]!)).toMatchObject({ prompt: 'a pine chair', n: 3, resolution: '4K' });
    const meta = readFileSync(`${stem}.json`, 'utf8');
    expect(JSON.parse(meta)).toMatchObject({ name: 'chairs', hash: fixture.hash, apiKeyEnv: 'CHAIRS_KEY' });
    expect(meta).not.toContain(SECRET);

    // Freezing it again (a second `run` of the manifest) reuses the files untouched, and the
    // first preparation's settings stay authoritative.
    const before = statSync(`${stem}.jsonl`).mtimeMs;
    writeFileSync(`${stem}.json`, meta.replace('"maxInFlight": 40', '"maxInFlight": 41'));
    const again = await createActivities().prepareRun({ plan: await frozenPlan(fixture.file) });
    expect(again.maxInFlight).toBe(41);
    expect(statSync(`${stem}.jsonl`).mtimeMs).toBe(before);
  });

  it('refuses a plan that belongs to another manifest hash, without retries', async () => {
    const fixture = catalog();
    const plan = await frozenPlan(fixture.file);
    const metaFile = join(plan.stateDir, `plan-${fixture.hash.slice(0, 16)}.json`);
    writeFileSync(metaFile, readFileSync(metaFile, 'utf8').replace(fixture.hash, 'f'.repeat(64)));
    const failure = await applicationFailure(createActivities().prepareRun({ plan }));
    expect(failure.type).toBe('ManifestChanged');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      "the run's plan belongs to another version of the manifest; run it with --new-run to start over",
    );
  });

  it('fails at once, naming the folder and both fixes, on a worker that cannot see a local output', async () => {
    const fixture = catalog();
    const elsewhere = join(fixture.outputDir, 'on-another-machine', '.pixelmill');
    const failure = await applicationFailure(
      createActivities().prepareRun({ plan: { stateDir: elsewhere, planHash: fixture.hash } }),
    );
    expect(failure.type).toBe('PlanMissing');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      `this worker cannot see the run's plan at ${elsewhere}: a local output must be a folder every worker ` +
        'reaches at that same path (a shared volume), or give the manifest an s3:// output, which workers share through the store',
    );
  });
});

describe('planShard', () => {
  it('answers the expected credits of each item of the slice', async () => {
    const fixture = catalog();
    const activities = createActivities();
    const { plan } = await activities.prepareRun({ plan: await frozenPlan(fixture.file) });
    expect(await activities.planShard({ plan, offset: 1, count: 2 })).toEqual({ credits: [12, 1] });
  });

  it('fails without retries when the plan is gone', async () => {
    const fixture = catalog();
    const failure = await applicationFailure(
      createActivities().planShard({
        plan: { stateDir: join(fixture.outputDir, '.pixelmill'), planHash: fixture.hash },
        offset: 0,
        count: 1,
      }),
    );
    expect(failure.type).toBe('PlanMissing');
    expect(failure.nonRetryable).toBe(true);
  });
});
