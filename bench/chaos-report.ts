// What `npm run chaos` prints: the checks of issue #6 section 2 with their limits, then the
// disruptions and the faults the emulator really injected, as a plain text table.
import type { ChaosResult, DisruptionRecord } from './chaos-run.js';
import { renderTable } from './report.js';

export interface ChaosCheck {
  name: string;
  value: number | boolean;
  limit: string;
  ok: boolean;
}

/**
 * A SIGKILLed worker may have sent submits whose answers never reached Temporal. The submit
 * journal gives a retry the task its first attempt got, and the Idempotency-Key every submit
 * carries makes the API answer a retry sent while the first was on the wire with the same task;
 * a provider without keys would bill a second task there. The check allows one resubmitted prompt
 * per kill, and one per restart of the Temporal side (completions that cannot be reported within
 * the SDK's 10 s of retries are lost the same way) or cut-off of a worker (the same completions,
 * held). RELIABILITY.md has what was measured.
 */
export function resubmissionLimit(result: ChaosResult): number {
  return result.disruptions.filter((event) => event.at_s !== null && event.kind !== 'webhook-outage').length;
}

export function chaosChecks(result: ChaosResult): ChaosCheck[] {
  const { audit } = result;
  const resubmitted = resubmissionLimit(result);
  return [
    { name: 'run finished', value: result.finished, limit: 'yes', ok: result.finished },
    { name: 'items lost', value: audit.items_lost, limit: '0', ok: audit.items_lost === 0 },
    {
      name: 'images missing or failing sha256',
      value: audit.images_bad,
      limit: '0',
      ok: audit.images_bad === 0,
    },
    {
      name: 'prompts submitted more than once',
      value: audit.prompts_submitted_more_than_once,
      limit: `<= ${resubmitted} (one per disruption but the webhook outage)`,
      ok: audit.prompts_submitted_more_than_once <= resubmitted,
    },
    { name: 'items stuck', value: audit.items_stuck, limit: '0', ok: audit.items_stuck === 0 },
    {
      name: 'report.jsonl inconsistent with the emulator',
      value: audit.report_inconsistencies,
      limit: '0',
      ok: audit.report_inconsistencies === 0,
    },
  ];
}

/** The checks as a table: name, value, limit, ok or FAIL. */
export function checksTable(checks: readonly ChaosCheck[]): string {
  return renderTable([
    ['check', 'value', 'limit', ''],
    ...checks.map((check) => [check.name, String(check.value), check.limit, check.ok ? 'ok' : 'FAIL']),
  ]);
}

/** The disruptions as a table: when each happened (or that the run was over first), and its detail. */
export function disruptionsTable(disruptions: readonly DisruptionRecord[]): string {
  return renderTable([
    ['disruption', 'at share', 'at s', 'detail'],
    ...disruptions.map((event) => [
      event.kind,
      String(event.at_share),
      event.at_s === null ? 'skipped (run over)' : String(event.at_s),
      event.kind === 'kill'
        ? `worker ${event.worker}`
        : event.kind === 'cut-off'
          ? `worker ${event.worker} cut ${event.down_s ?? '?'} s: ${event.connections?.open_at_cut ?? '?'} connections frozen, ` +
            `${event.completions_refused ?? '?'} completions refused after`
          : `down ${event.down_s ?? '?'} s`,
    ]),
  ]);
}

export function formatChaosReport(result: ChaosResult, checks: ChaosCheck[]): string {
  const { audit, faults } = result;
  const lines = [
    `pixelmill chaos run: ${result.options.items} items (${audit.images_expected} images), seed ${result.options.seed}, ` +
      `${result.options.workers} worker processes${result.options.shared_nothing ? ' sharing nothing (s3:// output)' : ''}, ` +
      `${result.machine.cpus} CPUs, ${result.machine.node}`,
    `wall ${result.wall_s} s; ${audit.completed} completed, ${audit.failed_by_api} failed by the API ` +
      `(every one of their tasks failed or was lost), ${audit.refused_by_api} refused by the API ` +
      `(poisoned prompts); ${audit.tasks_at_api} tasks at the API, ${audit.tasks_lost_at_api} of them lost there and given up`,
    '',
    checksTable(checks),
    '',
    disruptionsTable(result.disruptions),
    ...(result.unplanned_restarts.length
      ? ['', 'processes that died by themselves (restarted by the harness):', ...result.unplanned_restarts]
      : []),
    '',
    renderTable([
      ['fault injected', 'count'],
      ['HTTP 429 (rate limit)', String(faults.http_429)],
      ['HTTP 5xx (server_error_rate)', String(faults.server_error)],
      ['malformed: truncated JSON', String(faults.truncated_json)],
      ['malformed: extra fields', String(faults.extra_fields)],
      ['malformed: unknown status', String(faults.unknown_status)],
      ['downloads cut off', String(faults.truncated_download)],
      ['failed generations', String(faults.failed_generations)],
      ['tasks lost (stuck_task_rate)', String(faults.stuck_task)],
      ['tasks with wrong-aspect images', String(faults.wrong_aspect_image)],
      ['tasks with blank images', String(faults.blank_image)],
      ['poisoned submits refused', String(faults.poisoned_submit)],
      ['duplicate webhooks sent', String(faults.webhook_duplicate)],
    ]),
    '',
    `API calls: ${result.api_calls.submit} submits, ${result.api_calls.lookup} batch lookups, ` +
      `${result.api_calls.get} task GETs; ${result.api_calls.downloads} downloads`,
    `webhooks: ${result.webhooks.delivered} delivered, ${result.webhooks.gave_up} given up (left to polling)`,
    `extra submissions: ${audit.extra_submissions} tasks, ${audit.credits_charged_for_duplicates} credits charged for them`,
    `checks: ${audit.tasks_rejected_by_checks} tasks' images rejected and their items generated again ` +
      `(${audit.credits_rejected_by_checks} credits)`,
    `submit journal: ${audit.submits_taken_over} retried submits took their cut-off attempt's task instead; ` +
      `a task reached it ${audit.journal_lag_ms.p50} ms after the API created it (p99 ${audit.journal_lag_ms.p99}, ` +
      `max ${audit.journal_lag_ms.max}); ${audit.tasks_not_journaled} tasks never did (their answer was not read)`,
    ...(audit.resubmitted.length
      ? [
          'resubmitted items (s after the start at which each of their tasks was created):',
          ...audit.resubmitted.map((entry) => `  ${entry.id}: ${entry.submitted_s.join(', ')}`),
        ]
      : []),
    ...(audit.problems.length ? ['', 'problems:', ...audit.problems.map((problem) => `  ${problem}`)] : []),
  ];
  return lines.join('\n');
}
