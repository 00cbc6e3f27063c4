// Runs are findable and readable in Temporal: a run started the way `pixelmill run` starts it, on
// the embedded dev server (ensureDevServer, which registers pixelmill's search attributes), is
// found through the visibility API by those attributes with the right counts, and the dev
// server's Web UI, opened in a real headless chromium, shows it with its summary.
// With PIXELMILL_UPDATE_SCREENSHOT=1 its screenshot replaces the README's docs/temporal-ui.png;
// otherwise it goes to the temp dir, so that a test run leaves the checkout as it was.
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessWorkers } from '../client/embedded.js';
import { apiAccountId } from '../common/api-account.js';
import { taskQueuesOf } from '../common/names.js';
import { liveProgress } from '../client/progress.js';
import { startOrAttach } from '../client/runs.js';
import type { RunResult } from '../common/types.js';
import {
  COMPLETED_ATTRIBUTE,
  CREDITS_ATTRIBUTE,
  FAILED_ATTRIBUTE,
  ITEMS_ATTRIBUTE,
  MANIFEST_ATTRIBUTE,
  PIXELMILL_SEARCH_ATTRIBUTES,
} from '../common/search-attributes.js';
import { DEMO_API_KEY, type RunningEmulator } from '../emulator/index.js';
import { connectClient, devServerEndpoint } from '../temporal/connection.js';
import { ensureDevServer, type DevServer } from '../temporal/dev-server.js';
import { ensureNamespace, ensureSearchAttributes } from '../temporal/server-admin.js';
import { FAST_EMULATOR, writeCatalog, type Catalog } from './support/catalog-harness.js';
import { waitUntil } from './support/wait.js';
import { freePort } from './support/cli.js';
import { launchChromium } from './support/browser.js';
import { startTestEmulator } from './support/emulator.js';
import { runStart } from './support/plan.js';

const README_SCREENSHOT = fileURLToPath(new URL('../docs/temporal-ui.png', import.meta.url));
const MANIFEST_NAME = 'ui-catalog';
/** Items whose prompt holds the emulator's blocked word fail (content policy), not billed. */
const ITEMS = 12;
const BLOCKED = 2;

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

let server: DevServer;
let client: Client;
let emulator: RunningEmulator;
let catalog: Catalog;
let account: string;
let result: RunResult;
let screenshot: string;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-ui-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  screenshot = process.env.PIXELMILL_UPDATE_SCREENSHOT ? README_SCREENSHOT : join(dir, 'temporal-ui.png');
  server = await ensureDevServer({
    stateDir: join(dir, '.pixelmill'),
    port: await freePort(),
    uiPort: await freePort(),
    searchAttributes: PIXELMILL_SEARCH_ATTRIBUTES,
  });
  cleanups.push(() => server.stop());
  const endpoint = devServerEndpoint(server);
  const connected = await connectClient(endpoint);
  cleanups.push(() => connected.close());
  client = connected.client;
  emulator = await startTestEmulator({ ...FAST_EMULATOR, generation: { blocked_words: ['forbidden'] } });
  account = apiAccountId(emulator.url, DEMO_API_KEY);
  const workers = await startInProcessWorkers(
    endpoint,
    { baseUrl: emulator.url, apiKey: DEMO_API_KEY },
    taskQueuesOf(account),
  );
  cleanups.push(() => workers.stop());

  catalog = writeCatalog(dir, {
    name: MANIFEST_NAME,
    baseUrl: emulator.url,
    items: Array.from({ length: ITEMS }, (_, i) => ({
      id: `p${i + 1}`,
      prompt: i < BLOCKED ? `a forbidden lamp ${i}` : `a studio photo of lamp ${i}`,
    })),
  });
  const { handle, how } = await startOrAttach(
    client,
    catalog.runId,
    // A tiny history limit: the shard continues-as-new several times, and must keep its attributes.
    runStart(catalog.file, {
      manifestHash: catalog.hash,
      apiAccount: account,
      apiBaseUrl: emulator.url,
      emulated: false,
      tuning: { shardHistoryLimit: 12 },
    }),
    false,
  );
  expect(how).toBe('started');
  result = await handle.result();
}, 180_000);

function attributesOf(execution: WorkflowExecutionInfo) {
  const typed = execution.typedSearchAttributes;
  return {
    manifest: typed.get(MANIFEST_ATTRIBUTE),
    items: typed.get(ITEMS_ATTRIBUTE),
    completed: typed.get(COMPLETED_ATTRIBUTE),
    failed: typed.get(FAILED_ATTRIBUTE),
    credits: typed.get(CREDITS_ATTRIBUTE),
  };
}

async function list(query: string): Promise<WorkflowExecutionInfo[]> {
  const found: WorkflowExecutionInfo[] = [];
  for await (const execution of client.workflow.list({ query })) found.push(execution);
  return found;
}

describe('runs in Temporal visibility', () => {
  it('finds the finished run by its manifest name, with its counts and credits', async () => {
    expect(result.counts).toMatchObject({ completed: ITEMS - BLOCKED, failed: BLOCKED });
    expect(result.creditsSpent).toBeGreaterThan(0);
    const expected = {
      manifest: MANIFEST_NAME,
      items: ITEMS,
      completed: ITEMS - BLOCKED,
      failed: BLOCKED,
      credits: result.creditsSpent,
    };
    // Visibility is eventually consistent: wait until the closed run is indexed with its last upsert.
    const query = `PixelmillManifest = '${MANIFEST_NAME}' AND WorkflowType = 'runWorkflow'`;
    const [run] = await waitUntil('the run in visibility', async () => {
      const runs = await list(query);
      return runs.length === 1 && runs[0]?.status.name === 'COMPLETED' ? runs : undefined;
    });
    expect(run?.workflowId).toBe(catalog.runId);
    expect(attributesOf(run!)).toEqual(expected);

    // The counts are queryable, and another manifest's name finds nothing.
    const withFailures = await list(`PixelmillManifest = '${MANIFEST_NAME}' AND PixelmillFailed > 0`);
    expect(withFailures.map((execution) => execution.workflowId)).toContain(catalog.runId);
    expect(await list(`PixelmillManifest = 'some-other-manifest'`)).toEqual([]);

    // Its one shard carries the same manifest and its own share (here: all of it), and keeps them
    // across its continues-as-new: every run of it is found by the manifest's name.
    const shardId = `${catalog.runId}/shard-0001`;
    const shardRuns = await list(`WorkflowId = '${shardId}'`);
    expect(shardRuns.length).toBeGreaterThan(1);
    const shards = await list(`PixelmillManifest = '${MANIFEST_NAME}' AND WorkflowType = 'shardWorkflow'`);
    expect(shards.length).toBe(shardRuns.length);
    const [lastShardRun] = shards.filter((shard) => shard.status.name === 'COMPLETED');
    expect(lastShardRun?.workflowId).toBe(shardId);
    expect(attributesOf(lastShardRun!)).toEqual(expected);

    const description = await client.workflow.getHandle(catalog.runId).describe();
    expect(await description.staticSummary()).toBe(`pixelmill run of ${catalog.file}`);
    expect(description.memo).toMatchObject({ manifestHash: catalog.hash });
  });
});

describe('the run in the Temporal Web UI', () => {
  it("opens the run's page in chromium and shows its id and summary", async () => {
    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    const url = `${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(catalog.runId)}`;
    const response = await page.goto(url);
    expect(response?.ok()).toBe(true);
    const shows = (text: string) =>
      page.getByText(text).filter({ visible: true }).first().waitFor({ timeout: 30_000 });

    // The page: the run's readable id, and a timeline of activities and shards with their summaries.
    await shows(catalog.runId);
    await shows("read the run's plan and check its output");
    await shows(`shard 1 of 1: items[0..${ITEMS - 1}] of ${MANIFEST_NAME}`);
    mkdirSync(dirname(screenshot), { recursive: true });
    await page.screenshot({ path: screenshot });
    expect(statSync(screenshot).size).toBeGreaterThan(10_000);

    // Its summary and details, and the current details the workflow keeps (answered by the worker);
    // the UI renders each as markdown in its own frame.
    await page.getByText('User Metadata', { exact: true }).click();
    const framed = (frame: string, text: string) =>
      page.frameLocator(`#user-metadata-${frame}`).getByText(text).first().waitFor({ timeout: 30_000 });
    await framed('summary', `pixelmill run of ${catalog.file}`);
    await framed('details', catalog.hash.slice(0, 12));
    await framed(
      'current-details',
      `Finished: ${ITEMS - BLOCKED} of ${ITEMS} items completed, ${BLOCKED} failed`,
    );

    await page.getByText('Search Attributes', { exact: true }).click();
    await shows('PixelmillCompleted');
    await shows(MANIFEST_NAME);

    // Read after the run, with no worker needed: its result, first in the completed event's
    // details, says what did not complete.
    expect(result.outcome).toBe(
      `${ITEMS - BLOCKED} of ${ITEMS} items completed, ${BLOCKED} failed; ${result.creditsSpent} credits`,
    );
    await page
      .getByText(/^Event History/)
      .first()
      .click();
    await page.getByText('Workflow Execution Completed').first().click();
    await shows(result.outcome!);
  }, 90_000);

  it("shows a live run's details counting the items its running shards finished", async () => {
    const live = writeCatalog(dirname(catalog.file), {
      name: 'ui-live',
      baseUrl: emulator.url,
      // About 65 calls (a submit and a GET per item): 30 s or more, while a browser starts and looks.
      requestsPerSecond: 2,
      items: Array.from({ length: 30 }, (_, i) => ({ id: `l${i + 1}`, prompt: `a live lamp ${i}` })),
    });
    const { handle } = await startOrAttach(
      client,
      live.runId,
      runStart(live.file, {
        manifestHash: live.hash,
        apiAccount: account,
        apiBaseUrl: emulator.url,
        emulated: false,
      }),
      false,
    );
    cleanups.push(() => handle.terminate('test over').catch(() => undefined));
    // What the CLI sees: some items completed while the shard still runs.
    await waitUntil('items completed mid-run', async () => {
      const progress = await liveProgress(client, live.runId);
      return progress.counts.completed >= 4 && progress.run.state === 'running' ? progress : undefined;
    });

    const browser = await launchChromium();
    cleanups.push(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
    await page.goto(`${server.uiUrl}/namespaces/default/workflows/${encodeURIComponent(live.runId)}`);
    await page.getByText('User Metadata', { exact: true }).click();
    const details = page
      .frameLocator('#user-metadata-current-details')
      .getByText(/items completed/)
      .first();
    await details.waitFor({ timeout: 30_000 });
    const text = (await details.textContent()) ?? '';
    const completed = Number(/running: (\d+) of 30 items completed/.exec(text)?.[1] ?? 'NaN');
    // Before, a run's details counted finished shards only: "0 of 30" while items were stored.
    expect(completed, text).toBeGreaterThan(0);
    expect((await handle.result()).counts.completed).toBe(30);
  }, 120_000);
});

describe('a namespace where pixelmill cannot register its search attributes', () => {
  it('starts the run without them, says why, and the run still completes', async () => {
    // Another tool took one of pixelmill's names with another type: registration must refuse.
    const namespace = 'pixelmill-unindexed';
    await ensureNamespace(client.connection, namespace);
    await ensureSearchAttributes(client.connection, namespace, [
      { name: ITEMS_ATTRIBUTE.name, type: 'Keyword' },
    ]);
    const endpoint = { ...devServerEndpoint(server), namespace };
    const connected = await connectClient(endpoint);
    cleanups.push(() => connected.close());
    const workers = await startInProcessWorkers(
      endpoint,
      { baseUrl: emulator.url, apiKey: DEMO_API_KEY },
      taskQueuesOf(account),
    );
    cleanups.push(() => workers.stop());
    const dir = mkdtempSync(join(tmpdir(), 'pixelmill-unindexed-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const unindexed = writeCatalog(dir, {
      name: 'ui-unindexed',
      baseUrl: emulator.url,
      items: Array.from({ length: 3 }, (_, i) => ({ id: `u${i}`, prompt: `a studio photo of vase ${i}` })),
    });

    const outcome = await startOrAttach(
      connected.client,
      unindexed.runId,
      runStart(unindexed.file, { manifestHash: unindexed.hash, apiAccount: account, emulated: false }),
      false,
    );
    expect(outcome.how).toBe('started');
    expect(outcome.unindexed).toMatch(/PixelmillItems exists .* as Keyword.*not be searchable/);
    const finished = await outcome.handle.result();
    expect(finished.counts.completed).toBe(3);
    const description = await outcome.handle.describe();
    expect(description.typedSearchAttributes.get(MANIFEST_ATTRIBUTE)).toBeUndefined();
  }, 120_000);
});
