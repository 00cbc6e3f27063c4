// Issue #6 section 2, the small deterministic version of `npm run chaos` (bench/chaos.ts): 300
// items with a fixed seed (same catalog, same emulator randomness) against an emulator injecting
// every fault at once (lost tasks and prompts it refuses to build among them), `pixelmill worker`
// processes SIGKILLed at fixed shares of the downloads, the webhook receiver down for 15 s, and
// the persisted Temporal dev server stopped and started again in between. The audit is the chaos
// run's own (bench/chaos-audit.ts, on bench/catalog-audit.ts): nothing lost, every image as
// served, resubmissions bounded by the disruptions, the report true to the ground truth, and the
// run ended although some of its submits are refused forever and some tasks never finish.
// It runs in the shared-nothing mode (root only), the production set-up: workers and receiver in
// mount namespaces that hide the run's folder, the output and the run's state in an s3:// bucket
// on rclone, audited through the S3 API. Kills on a local-disk output are
// test/catalog-durability.test.ts's; `npm run chaos` runs either mode at any size.
//
// Needs the built CLI (`npm run build`): workers, webhook receiver and starter are real processes.
// A run that misses its deadline keeps its folder (Temporal's state, the process logs and
// diagnosis.json: what every running shard was waiting for) and says where.
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { chaosChecks, formatChaosReport } from '../bench/chaos-report.js';
import { chaosItems, isPoisoned, type DisruptionKind } from '../bench/chaos-config.js';
import { runChaos, type ChaosResult } from '../bench/chaos-run.js';
import { cleanUpAll } from '../bench/processes.js';
import { CLI } from './support/cli.js';

afterAll(() => cleanUpAll());

/**
 * The run's deadline, from what each disruption can cost at most (workflows/activities.ts,
 * workflows/tracking.ts), added up although they overlap:
 * - the run undisturbed: 28 s measured on 2 cores, doubled for a loaded machine      60 s
 * - each SIGKILL: the dead worker's activities miss their 10 s heartbeat timeout,
 *   then a 2 s retry interval; two kills                                             24 s
 * - the server restart: down up to 10 s, then the same 12 s for lost completions      22 s
 * - the webhook outage: 15 s down, then a lost delivery waits for the next lookup,
 *   at most 30 s apart with webhooks on                                              45 s
 * - a task GET that contradicts its lookup is asked again 1 + 2 + 4 s later            7 s
 * - a task the API lost: overdue after limits.task_timeout (20 s), looked up then,
 *   confirmed by a GET asked again 1 + 2 + 4 s later, then a new task (3 s)          32 s
 * - a poisoned submit: refused after 5 to 7 of the same failure, 1 + 2 + ... + 32 s,
 *   with 429s in between; the last poisoned item is first tried before 60%            70 s
 *                                                                             sum  260 s
 */
const RUN_DEADLINE_MS = 260_000;

/** The audit's verdict: every disruption happened mid-run, the run finished, nothing was lost. */
function expectNothingLost(result: ChaosResult, disruptions: DisruptionKind[]): void {
  const checks = chaosChecks(result);
  console.log(formatChaosReport(result, checks));
  const { audit, options } = result;
  expect(result.disruptions.map((event) => [event.kind, event.at_s !== null])).toEqual(
    disruptions.map((kind) => [kind, true]),
  );
  expect(result.finished).toBe(true);
  expect(audit.items_stuck).toBe(0);

  expect(audit.problems).toEqual([]);
  expect(audit.items_lost).toBe(0);
  expect(audit.completed + audit.failed_by_api + audit.refused_by_api).toBe(options.items);
  // The poisoned items (1 in 100) failed with the API's refusal; the run did not wait on them.
  expect(audit.refused_by_api).toBe(
    chaosItems(options.items, options.seed).filter((_, i) => isPoisoned(i, options.items)).length,
  );
  expect(audit.images_bad).toBe(0);
  expect(audit.report_inconsistencies).toBe(0);
  // One per kill and one for the restart (bench/chaos-report.ts says why).
  const resubmissionsAllowed = disruptions.filter((kind) => kind !== 'webhook-outage').length;
  expect(audit.prompts_submitted_more_than_once).toBeLessThanOrEqual(resubmissionsAllowed);
  expect(checks.filter((check) => !check.ok)).toEqual([]);
}

describe('a catalog run under chaos', () => {
  it('loses nothing while workers that share nothing with the CLI are SIGKILLed, the server restarts and the API misbehaves', async () => {
    if (!existsSync(CLI.replace(/bin\/pixelmill\.js$/, 'dist/client/main.js')))
      throw new Error('build first: npm run build');
    const result = await runChaos({
      items: 300,
      kills: 2,
      seed: 11,
      workers: 2,
      restartServer: true,
      killAt: [0.35, 0.8],
      restartAt: 0.55,
      // First, while tasks finish steadily: after a kill the run slows until the dead worker's
      // submits time out, and an outage then would lose few webhooks (and meet few queries).
      webhookOutageAt: 0.1,
      webhookOutageMs: 15_000,
      sharedNothing: true,
      // A small run makes few queries (webhooks report most tasks): garble more of them.
      faults: { malformed_response_rate: 0.3 },
      deadlineMs: RUN_DEADLINE_MS,
      cli: CLI,
      log: (line) => console.log(line),
    });
    expectNothingLost(result, ['webhook-outage', 'kill', 'restart-server', 'kill']);
    const { audit, faults } = result;

    // The faults were really there (counted by the emulator as it injected them).
    expect(faults.server_error).toBeGreaterThan(0);
    expect(faults.truncated_download).toBeGreaterThan(0);
    expect(faults.failed_generations).toBeGreaterThan(0);
    expect(faults.webhook_duplicate).toBeGreaterThan(0);
    expect(faults.http_429).toBeGreaterThan(0);
    expect(faults.truncated_json + faults.extra_fields + faults.unknown_status).toBeGreaterThan(0);
    expect(faults.poisoned_submit).toBeGreaterThan(0);
    expect(faults.stuck_task).toBeGreaterThan(0);
    // Wrong images were made, rejected by the checks and generated again (summary.json agrees:
    // the audit compares its checks.tasks_regenerated and credits with the emulator's).
    expect(faults.wrong_aspect_image + faults.blank_image).toBeGreaterThan(0);
    expect(audit.tasks_rejected_by_checks).toBeGreaterThan(0);
    // Every lost task was given up (summary.json says so, checked by the audit) and resubmitted.
    expect(audit.tasks_lost_at_api).toBe(faults.stuck_task);
    // The journal the audit read from the bucket saw every task the API created.
    expect(audit.tasks_not_journaled).toBe(0);
  }, 360_000);
});
