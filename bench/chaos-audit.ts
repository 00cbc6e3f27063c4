// The audit of a chaos run against the emulator's ground truth (every task it acknowledged) and
// the bytes on disk and on the result host. It computes figures rather than asserting, so that
// `npm run chaos` can print them and test/chaos.test.ts can hold them to their bounds. The reading
// of report.jsonl, summary.json and the ground truth is bench/catalog-audit.ts's, shared
// with the durability test; what it checks of the report as the providers' audit does is
// bench/audit-report.ts's.
import { taskIdOf } from '../common/task-ref.js';
import { imageFaultOf } from '../emulator/apimart/images/faults.js';
import type { RunningEmulator } from '../emulator/index.js';
import type { GroundTruthTask } from '../emulator/apimart/routes/admin.js';
import type { ReportLine } from '../report/report-line.js';
import type { JournalLine } from '../runstate/index.js';
import type { AuditFiles } from './audit-files.js';
import { ReportTally, secondsAfter, summaryCountInconsistencies, type FinishedRun } from './audit-report.js';
import { groundTruth, mapLimit, servedSha256, sha256 } from './catalog-audit.js';
import { CHAOS_POISON_WORD, type ChaosItem } from './chaos-config.js';
import { percentile } from './figures.js';

export interface ChaosAudit {
  items: number;
  images_expected: number;
  /** Items reported completed with every image stored. */
  completed: number;
  /**
   * Items that failed because every one of their `max_attempts` tasks failed at the API or was
   * lost there (given up after limits.task_timeout).
   */
  failed_by_api: number;
  /** Poisoned items whose submit the API never accepted, reported failed with its error. */
  refused_by_api: number;
  /** Tasks the API lost (processing forever), each given up by the run. */
  tasks_lost_at_api: number;
  /** Items neither completed nor failed by the API (absent from the report included). Must be 0. */
  items_lost: number;
  /** Images missing, or whose file or served bytes do not match the report's sha256. Must be 0. */
  images_bad: number;
  /** Items whose prompt reached the API more often than their attempts (crash resubmissions). */
  prompts_submitted_more_than_once: number;
  /** Tasks created beyond one per attempt, over all items. */
  extra_submissions: number;
  /** Credits the emulator charged for those extra tasks (the price of the duplicates). */
  credits_charged_for_duplicates: number;
  /**
   * Completed tasks whose images the emulator made wrong (faults.wrong_aspect_image_rate,
   * blank_image_rate) and the run's checks rejected, so their item was generated again.
   */
  tasks_rejected_by_checks: number;
  credits_rejected_by_checks: number;
  /**
   * Retried submits that took the task of an attempt cut off after the API answered, from the
   * submit journal (runstate/submit-journal.ts): the duplicates the journal saved.
   */
  submits_taken_over: number;
  /**
   * From the API creating a task to its line in the journal (ms): the time a kill would have
   * cost a duplicate. Tasks without a line were created by a request whose answer was never read.
   */
  journal_lag_ms: { p50: number; p99: number; max: number };
  tasks_not_journaled: number;
  /** Report or summary entries that contradict the emulator or each other. Must be 0. */
  report_inconsistencies: number;
  tasks_at_api: number;
  /** The first items submitted more than once: when each of their tasks was created (s after the start). */
  resubmitted: { id: string; submitted_s: number[] }[];
  /** The first problems found, one line each. */
  problems: string[];
}

const SERVED_ATTEMPTS = 5;

/** The served bytes' sha256, retried: the result host still truncates some downloads on purpose. */
async function servedShaWithRetries(url: string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await servedSha256(url);
    } catch (error) {
      if (attempt >= SERVED_ATTEMPTS) throw error;
    }
  }
}

export interface AuditInput {
  items: ChaosItem[];
  /** The run's output: its folder, or its bucket. */
  files: AuditFiles;
  emulator: RunningEmulator;
  maxAttempts: number;
  /** Epoch ms the run started, to place resubmissions among the disruptions. */
  startedAtMs: number;
}

export async function auditChaosRun({
  items,
  files,
  emulator,
  maxAttempts,
  startedAtMs,
}: AuditInput): Promise<ChaosAudit> {
  const tasks = await groundTruth(emulator);
  const tasksByPrompt = new Map<string, GroundTruthTask[]>();
  for (const task of tasks) {
    const same = tasksByPrompt.get(task.prompt);
    if (same) same.push(task);
    else tasksByPrompt.set(task.prompt, [task]);
  }
  const taskById = new Map(tasks.map((task) => [task.id, task]));
  /** A completed task whose images the emulator made wrong on purpose: the checks must reject it. */
  const faultyImages = (task: GroundTruthTask): boolean =>
    task.status === 'completed' &&
    imageFaultOf(emulator.config.seed, task.id, emulator.config.faults) !== undefined;
  const audit: ChaosAudit = {
    items: items.length,
    images_expected: items.reduce((sum, item) => sum + item.n, 0),
    completed: 0,
    failed_by_api: 0,
    refused_by_api: 0,
    tasks_lost_at_api: tasks.filter(lostAtApi).length,
    items_lost: 0,
    images_bad: 0,
    prompts_submitted_more_than_once: 0,
    extra_submissions: 0,
    credits_charged_for_duplicates: 0,
    tasks_rejected_by_checks: 0,
    credits_rejected_by_checks: 0,
    ...journalFigures(await files.journal(), tasks),
    report_inconsistencies: 0,
    tasks_at_api: tasks.length,
    resubmitted: [],
    problems: [],
  };
  const tally = new ReportTally(audit, 'API');
  const { problem, inconsistent } = tally;
  const run = await tally.readRun(files, items.length);
  if (!run) return audit;

  const toCheck: ImageToCheck[] = [];
  for (const item of items) {
    const submitted = tasksByPrompt.get(item.prompt) ?? [];
    const line = tally.lineOf(run, item.id, submitted.length);
    if (!line) continue;
    if (item.prompt.includes(CHAOS_POISON_WORD)) {
      if (refusedAsReported(line) && submitted.length === 0) audit.refused_by_api++;
      else {
        audit.items_lost++;
        problem(
          `${item.id}: poisoned, but reported ${line.status} (${line.error?.type ?? 'no error'}) with ${submitted.length} tasks at the API`,
        );
      }
      continue;
    }
    // An item is resubmitted only after a failed task or a rejected image, so a completed task
    // with good images it does not report is a duplicate; failed ones were refunded.
    for (const task of submitted) {
      if (task.id === line.task_id || task.status !== 'completed') continue;
      if (faultyImages(task)) {
        audit.tasks_rejected_by_checks++;
        audit.credits_rejected_by_checks += task.credits_cost;
      } else audit.credits_charged_for_duplicates += task.credits_cost;
    }
    // Without crashes each attempt is exactly one task; more means a submit was repeated.
    tally.extraTasks(line, submitted.length, () => ({
      id: item.id,
      submitted_s: submitted.map((task) => secondsAfter(startedAtMs, task.submitted_at_ms)),
    }));

    const task = line.task_id === null ? undefined : taskById.get(line.task_id);
    if (line.status === 'completed') {
      audit.completed++;
      if (!task || task.prompt !== item.prompt || task.status !== 'completed' || faultyImages(task)) {
        inconsistent(
          `${item.id}: reported completed with task ${line.task_id}, which the API has as ${task?.status ?? 'unknown'}${task && task.prompt !== item.prompt ? ' for another prompt' : ''}${task && faultyImages(task) ? ' with wrong images' : ''}`,
        );
        continue;
      }
      if (line.credits_cost !== task.credits_cost)
        inconsistent(`${item.id}: credits_cost ${line.credits_cost}, the API charged ${task.credits_cost}`);
      if (line.images.length !== item.n) {
        audit.images_bad += Math.max(0, item.n - line.images.length);
        problem(`${item.id}: ${line.images.length} of ${item.n} images`);
      }
      line.images.forEach((image, k) => {
        const expectedUrl = `${emulator.resultBaseUrl}/${task.id}/${k}.png`;
        if (image.source_url !== expectedUrl)
          inconsistent(`${item.id}: image ${k} from ${image.source_url}, not ${expectedUrl}`);
        toCheck.push({
          item: item.id,
          path: image.path,
          sha256: image.sha256,
          bytes: image.bytes,
          url: image.source_url,
        });
      });
      continue;
    }
    const allFailed =
      submitted.length >= maxAttempts &&
      submitted.every((t) => t.status === 'failed' || lostAtApi(t) || faultyImages(t));
    if (
      line.status === 'failed' &&
      FAILED_BY_API.has(line.error?.code ?? '') &&
      line.attempts === maxAttempts &&
      allFailed
    ) {
      audit.failed_by_api++;
      continue;
    }
    audit.items_lost++;
    problem(
      `${item.id}: ${line.status} (${line.error?.code ?? 'no error'}: ${line.error?.message ?? ''}) after ${line.attempts} attempts; API tasks: ${submitted.map((t) => t.status).join(', ') || 'none'}`,
    );
  }

  audit.images_bad += await badImages(toCheck, files, problem);
  const charged = emulator.stats().credits_charged;
  for (const line of summaryInconsistencies(run, charged, audit)) inconsistent(line);
  return audit;
}

/** The codes of an item whose every task failed at the API, was lost there or made wrong images. */
const FAILED_BY_API = new Set(['generation_failed', 'task_timeout', 'check_aspect_ratio', 'check_blank']);

/** A task still unfinished once the run is over: lost by the API, which never finishes it. */
function lostAtApi(task: GroundTruthTask): boolean {
  return task.status === 'pending' || task.status === 'processing';
}

/** A poisoned item as it must be reported: failed with the API's refusal, nothing charged. */
function refusedAsReported(line: ReportLine): boolean {
  return (
    line.status === 'failed' &&
    line.error?.type === 'SubmitRefused' &&
    line.error.code === 'build_request_failed' &&
    line.task_id === null &&
    line.credits_cost === 0
  );
}

/**
 * The submit journal against the tasks the API created: retried submits that took a task over,
 * and each task's lag from its creation to its line. A line names pixelmill's task reference
 * (a provider's id, then `|` and its locator where it needs one), matched by the id.
 */
export function journalFigures(
  lines: readonly Partial<JournalLine>[],
  tasks: readonly Pick<GroundTruthTask, 'id' | 'submitted_at_ms'>[],
): Pick<ChaosAudit, 'submits_taken_over' | 'journal_lag_ms' | 'tasks_not_journaled'> {
  const journaledAt = new Map<string, number>();
  for (const line of lines) {
    if (line.taken_over_at_attempt === undefined && line.task !== undefined && line.at !== undefined)
      journaledAt.set(taskIdOf(line.task), line.at);
  }
  const lags: number[] = [];
  for (const task of tasks) {
    const at = journaledAt.get(task.id);
    if (at !== undefined) lags.push(at - task.submitted_at_ms);
  }
  lags.sort((a, b) => a - b);
  return {
    submits_taken_over: lines.filter((line) => line.taken_over_at_attempt !== undefined).length,
    journal_lag_ms: { p50: percentile(lags, 50), p99: percentile(lags, 99), max: lags.at(-1) ?? 0 },
    tasks_not_journaled: tasks.length - lags.length,
  };
}

interface ImageToCheck {
  item: string;
  path: string;
  sha256: string;
  bytes: number;
  url: string;
}

/** Images not stored as reported, reported twice, or not what the result host serves. */
async function badImages(
  images: ImageToCheck[],
  files: AuditFiles,
  problem: (line: string) => void,
): Promise<number> {
  let bad = 0;
  const paths = new Set<string>();
  const stored = await mapLimit(images, 16, (image) => files.read(image.path));
  images.forEach((image, k) => {
    if (paths.has(image.path)) {
      bad++;
      problem(`${image.item}: ${image.path} is reported twice`);
    }
    paths.add(image.path);
    const bytes = stored[k];
    if (!bytes || bytes.length !== image.bytes || sha256(bytes) !== image.sha256) {
      bad++;
      problem(`${image.item}: ${image.path} ${bytes ? 'does not match its report entry' : 'is missing'}`);
    }
  });
  const served = await mapLimit(images, 16, (image) =>
    servedShaWithRetries(image.url).catch(() => 'unavailable'),
  );
  images.forEach((image, k) => {
    if (served[k] === image.sha256) return;
    bad++;
    problem(`${image.item}: ${image.path} differs from what ${image.url} serves (${served[k]})`);
  });
  return bad;
}

/** summary.json against the report, and the API's total charge against report + duplicates. */
function summaryInconsistencies(
  { byId, summary }: FinishedRun,
  charged: number,
  audit: Pick<
    ChaosAudit,
    | 'credits_charged_for_duplicates'
    | 'tasks_lost_at_api'
    | 'tasks_rejected_by_checks'
    | 'credits_rejected_by_checks'
  >,
): string[] {
  const lines = [...byId.values()];
  const found = summaryCountInconsistencies(summary, lines);
  const credits = lines.reduce((sum, line) => sum + line.credits_cost, 0);
  const rejected = audit.credits_rejected_by_checks;
  if (summary.credits_charged !== credits + rejected)
    found.push(
      `summary charges ${summary.credits_charged} credits; the report ${credits} + images rejected ${rejected}`,
    );
  if (summary.tasks_given_up !== audit.tasks_lost_at_api)
    found.push(`summary gives up ${summary.tasks_given_up} tasks, the API lost ${audit.tasks_lost_at_api}`);
  const regenerated = summary.checks?.tasks_regenerated ?? 0;
  if (regenerated !== audit.tasks_rejected_by_checks)
    found.push(
      `summary regenerates ${regenerated} tasks' items, the API made ${audit.tasks_rejected_by_checks} wrong`,
    );
  const duplicates = audit.credits_charged_for_duplicates;
  if (charged !== credits + duplicates + rejected)
    found.push(
      `the API charged ${charged} credits; report ${credits} + duplicates ${duplicates} + rejected ${rejected}`,
    );
  return found;
}
