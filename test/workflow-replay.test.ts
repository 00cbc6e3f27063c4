// Determinism guard: workflow histories recorded from real runs (test/fixtures/histories/) are
// replayed against the current workflows/. A change to workflow code that would break runs in
// flight (a reordered activity call, a new timer, a changed continue-as-new point) fails here
// instead of in production. Re-record on purpose, only when such a change is intended and no old
// run must survive it:
//
//   RECORD_HISTORIES=1 npx vitest run test/workflow-replay.test.ts
//
// or record only some cases beside the others (a new case, for code that a patch added):
// RECORD_HISTORIES=continued (names as the fixtures' prefixes, comma-separated).
//
// Recording runs real catalogs (dev server, in-process workers, the emulator): one with
// random failures, a blocked prompt, resubmits and a shard that continues as new; one stopped by
// its budget; one paused, resumed and cancelled by signals; one of three shards that hand off to
// each other; one whose rate the account's governor discovers (its history is saved too); one
// whose run continues as new while its shards run on; one whose run is terminated while its shard
// submits.
import './support/quiet-runtime.js';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import {
  cancelSignal,
  governorWorkflowId,
  pauseSignal,
  resumeSignal,
  shardWorkflowId,
} from '../common/names.js';
import { groundTruth, historyChain, runHistories } from '../bench/catalog-audit.js';
import {
  FAST_EMULATOR,
  startInProcessWorkers,
  startRun,
  startTemporalHarness,
  writeCatalog,
  type CatalogItem,
} from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';
import { startTestEmulator } from './support/emulator.js';
import { historyFixtureJson, parseHistoryFixture, type HistoryFixture } from './support/history-fixtures.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/histories/', import.meta.url));
const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

function loadFixtures(): { file: string; fixture: HistoryFixture }[] {
  return readdirSync(FIXTURES)
    .filter((name) => name.endsWith('.json'))
    .sort()
    .map((name) => ({
      file: name,
      fixture: parseHistoryFixture(readFileSync(join(FIXTURES, name), 'utf8')),
    }));
}

function catalogItems(count: number, prompt: (i: number) => string): CatalogItem[] {
  return Array.from({ length: count }, (_, i) => ({ id: `r${i}`, prompt: prompt(i), n: (i % 2) + 1 }));
}

/** The cases to record: all of them (RECORD_HISTORIES=1), or those named. */
function prepareRecording(): (name: string) => boolean {
  const names = process.env.RECORD_HISTORIES === '1' ? undefined : process.env.RECORD_HISTORIES?.split(',');
  if (!names) rmSync(FIXTURES, { recursive: true, force: true });
  mkdirSync(FIXTURES, { recursive: true });
  for (const file of readdirSync(FIXTURES))
    if (names?.some((name) => file.startsWith(`${name}-`))) rmSync(join(FIXTURES, file));
  return (name) => !names || names.includes(name);
}

async function record(): Promise<void> {
  const { env, dir } = await startTemporalHarness();
  await startInProcessWorkers(env);
  const wanted = prepareRecording();
  const save = async (runId: string, prefix: string) => {
    const records = await runHistories(env.client, runId, 1);
    records.forEach(({ workflowId, history }, k) => {
      const name = `${prefix}-${workflowId.endsWith(runId) ? 'run' : 'shard'}-${k}.json`;
      writeFileSync(join(FIXTURES, name), historyFixtureJson(workflowId, history));
    });
  };

  /** The first execution of `workflowId`, as `name`. */
  const saveFirst = async (workflowId: string, name: string) => {
    const [first] = await historyChain(env.client, workflowId);
    writeFileSync(join(FIXTURES, name), historyFixtureJson(first!.workflowId, first!.history));
  };

  // Failures, a blocked prompt, resubmits; a low history limit makes the shard continue as new.
  const failing = await startTestEmulator({
    ...FAST_EMULATOR,
    generation: { failure_rate: 0.2, blocked_words: ['forbidden'] },
  });
  if (wanted('mixed')) {
    const mixed = writeCatalog(dir, {
      name: 'replay-mixed',
      baseUrl: failing.url,
      items: catalogItems(120, (i) => (i % 25 === 7 ? `forbidden item ${i}` : `replay item ${i}`)),
      retry: { maxAttempts: 2, on: ['generation_error'] },
    });
    await (await startRun(env.client, mixed, { shardHistoryLimit: 50 })).result();
    await save(mixed.runId, 'mixed');
  }

  // A budget stop.
  if (wanted('budget')) {
    const budget = writeCatalog(dir, {
      name: 'replay-budget',
      baseUrl: failing.url,
      items: catalogItems(30, (i) => `budget item ${i}`),
      budgetCredits: 20,
    });
    await (await startRun(env.client, budget)).result();
    await save(budget.runId, 'budget');
  }

  // Signals: pause, resume, then cancel mid-run.
  const slow = await startTestEmulator({ ...FAST_EMULATOR, time_scale: 0.02 });
  if (wanted('control')) {
    const control = writeCatalog(dir, {
      name: 'replay-control',
      baseUrl: slow.url,
      items: catalogItems(60, (i) => `control item ${i}`),
      maxInFlight: 5,
    });
    const handle = await startRun(env.client, control);
    await waitUntil('5 tasks', async () => (await groundTruth(slow)).length >= 5);
    await handle.signal(pauseSignal);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await handle.signal(resumeSignal);
    await waitUntil('15 tasks', async () => (await groundTruth(slow)).length >= 15);
    await handle.signal(cancelSignal);
    await handle.result();
    await save(control.runId, 'control');
  }

  // The run terminated (as from Temporal's UI) while its shard submits: the shard's run checks,
  // the one the run refuses, and its end after storing what was in flight.
  if (wanted('terminated')) {
    const terminated = writeCatalog(dir, {
      name: 'replay-terminated',
      baseUrl: slow.url,
      items: catalogItems(60, (i) => `terminated item ${i}`),
      maxInFlight: 5,
    });
    // The control run's tasks are on the same emulator: ten more than those, this run's own.
    const before = (await groundTruth(slow)).length;
    const handle = await startRun(env.client, terminated, { runCheckMs: 500 });
    await waitUntil('10 tasks', async () => (await groundTruth(slow)).length >= before + 10);
    await handle.terminate('replay fixture: terminated from the UI');
    const shard = env.client.workflow.getHandle(shardWorkflowId(terminated.runId, 0));
    await shard.result();
    await saveFirst(shard.workflowId, 'terminated-shard-1.json');
  }

  // Handoffs: 1,100 items in three shards, two submitting at a time, so the third starts
  // when one of the first two has submitted everything (workflows/in-flight-shares.ts). Saved: the
  // run, and the third shard (started on a handoff, its share raised as the tails close).
  const emulator = await startTestEmulator(FAST_EMULATOR);
  if (wanted('handoff')) {
    const handoff = writeCatalog(dir, {
      name: 'replay-handoff',
      baseUrl: emulator.url,
      items: catalogItems(1_100, (i) => `handoff item ${i}`),
      maxInFlight: 60,
    });
    await (await startRun(env.client, handoff)).result();
    await saveFirst(handoff.runId, 'handoff-run-0.json');
    await saveFirst(shardWorkflowId(handoff.runId, 2), 'handoff-shard-3.json');
  }

  // A discovered rate: the run joins the governor, whose history (still open) is saved too.
  if (wanted('governed')) {
    const governed = writeCatalog(dir, {
      name: 'replay-governed',
      baseUrl: emulator.url,
      items: catalogItems(60, (i) => `governed item ${i}`),
      requestsPerSecond: 'auto',
    });
    await (await startRun(env.client, governed)).result();
    await save(governed.runId, 'governed');
    await saveFirst(governorWorkflowId(undefined), 'governed-governor-0.json');
  }

  // A run that continues as new every few shards (a low run history limit), 1,100 items in three
  // shards: every execution of the run is saved, and the first shard's last one, which tells a
  // later execution of the run than the one that started it its result.
  if (wanted('continued')) {
    const continued = writeCatalog(dir, {
      name: 'replay-continued',
      baseUrl: emulator.url,
      items: catalogItems(1_100, (i) => `continued item ${i}`),
      maxInFlight: 60,
    });
    await (await startRun(env.client, continued, { runHistoryLimit: 40, shardHistoryLimit: 300 })).result();
    const executions = await historyChain(env.client, continued.runId);
    executions.forEach(({ workflowId, history }, k) =>
      writeFileSync(join(FIXTURES, `continued-run-${k}.json`), historyFixtureJson(workflowId, history)),
    );
    // The shard's last execution: the one that tells the run its result.
    const last = (await historyChain(env.client, shardWorkflowId(continued.runId, 0))).at(-1)!;
    writeFileSync(
      join(FIXTURES, 'continued-shard-1.json'),
      historyFixtureJson(last.workflowId, last.history),
    );
  }
}

describe('workflow replay', () => {
  it.runIf(Boolean(process.env.RECORD_HISTORIES))('records fresh histories', record, 300_000);

  it('replays every recorded history with the current workflow code', async () => {
    const fixtures = loadFixtures();
    // The fixtures cover the cases that matter: a run, shards, and a shard continued as new.
    const started = (f: HistoryFixture) => f.history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(fixtures.filter(({ file }) => file.includes('-run-')).length).toBeGreaterThanOrEqual(3);
    expect(fixtures.some(({ fixture }) => started(fixture)?.continuedExecutionRunId)).toBe(true);
    // ... and a run continued as new, as every large run is.
    expect(
      fixtures.some(
        ({ file, fixture }) => file.includes('-run-') && started(fixture)?.continuedExecutionRunId,
      ),
    ).toBe(true);
    expect(fixtures.every(({ fixture }) => (fixture.history.events?.length ?? 0) < 10_240)).toBe(true);

    const results = Worker.runReplayHistories(
      { workflowsPath, replayName: 'pixelmill-replay' },
      fixtures.map(({ fixture }) => ({ workflowId: fixture.workflowId, history: fixture.history })),
    );
    const outcomes: string[] = [];
    for await (const result of results)
      outcomes.push(`${result.workflowId}: ${result.error?.message ?? 'ok'}`);
    expect(outcomes).toEqual(fixtures.map(({ fixture }) => `${fixture.workflowId}: ok`));
  }, 120_000);

  it('fails on a history the code would not have produced', async () => {
    const shard = loadFixtures().find(({ file }) => file.includes('-shard-'));
    expect(shard).toBeDefined();
    const history = structuredClone(shard!.fixture.history);
    // Rename the first activity the shard scheduled: the code schedules a different one.
    const scheduled = history.events.find((event) => event.activityTaskScheduledEventAttributes) as
      { activityTaskScheduledEventAttributes: { activityType: { name: string } } } | undefined;
    expect(scheduled).toBeDefined();
    scheduled!.activityTaskScheduledEventAttributes.activityType.name = 'notAPixelmillActivity';
    await expect(
      Worker.runReplayHistory({ workflowsPath, replayName: 'pixelmill-replay-tampered' }, history),
    ).rejects.toThrow(/[Nn]ondetermin/);
  }, 120_000);
});
