// The audit of a provider's chaos run (bench/providers-chaos-run.ts) against the emulator's ground
// truth and the files stored: every item completed with a task the provider made for its prompt and
// whose result was fetched, or failed because every one of its tasks failed at the provider; each
// image on disk as its report line says (size, sha256), whole (it decodes), and, where the provider
// still serves it, the bytes it serves; submits beyond one per attempt; results the provider
// deleted before anyone fetched them, told apart by whose they were. Figures, not assertions:
// bench/providers-chaos.ts holds them to issue 39's targets. The report is read and checked as
// bench/chaos-audit.ts reads it (bench/audit-report.ts).
import sharp from 'sharp';
import { request } from 'undici';
import type { AuditFiles } from './audit-files.js';
import { ReportTally, secondsAfter, summaryCountInconsistencies } from './audit-report.js';
import { mapLimit, sha256 } from './catalog-audit.js';
import { journalFigures, type ChaosAudit } from './chaos-audit.js';
import type { TaskTruth } from './providers-setups.js';

export interface ChaosItemOf {
  id: string;
  prompt: string;
}

export interface ProviderChaosAudit {
  items: number;
  /** Items reported completed with their images stored. */
  completed: number;
  /** Items failed after `max_attempts` tasks, every one of which failed at the provider. */
  failed_by_provider: number;
  /** Items neither (absent from the report included). Must be 0. */
  items_lost: number;
  /** Items reported `expired`: each of their attempts' results deleted before it was stored. */
  items_expired: number;
  /** Images missing, not as reported, not whole, or not what the provider serves. Must be 0. */
  images_bad: number;
  /** Images compared with the bytes the provider still served at the audit. */
  images_matched_served: number;
  /** Images the provider no longer served at the audit (retention over): checked on disk only. */
  images_gone_at_provider: number;
  /** Items whose prompt reached the provider more often than their attempts. */
  prompts_submitted_more_than_once: number;
  /** Tasks created beyond one per attempt, over all items: the duplicate submits. */
  extra_submissions: number;
  /**
   * Tasks that succeeded and whose result the provider deleted (or whose URL expired) before
   * anyone fetched it, by whose they were: `attempt` a task the run counted as an attempt of its
   * item (a real loss, resubmitted or reported expired), `duplicate` one of the extra submissions
   * (whose answer nobody read, so nobody was to fetch it).
   */
  deleted_unfetched: { attempt: number; duplicate: number };
  /** Tasks that succeeded, were never fetched and are not deleted yet (duplicates, at the end). */
  unfetched_not_yet_deleted: number;
  journal: Pick<ChaosAudit, 'submits_taken_over' | 'journal_lag_ms' | 'tasks_not_journaled'>;
  /** Report or summary entries that contradict the emulator or each other. Must be 0. */
  report_inconsistencies: number;
  tasks_at_provider: number;
  /**
   * The results fetched latest after they were ready (s after the run's start), to place them
   * among the disruptions: the worst of the ready-to-fetch shares.
   */
  slowest_fetches: { task: string; ready_s: number; fetched_s: number; lag_s: number }[];
  /** The first items submitted more than once: when each of their tasks was created (s after the start). */
  resubmitted: { id: string; attempts: number; submitted_s: number[] }[];
  problems: string[];
}

interface AuditInput {
  items: ChaosItemOf[];
  files: AuditFiles;
  tasks: TaskTruth[];
  maxAttempts: number;
  startedAtMs: number;
}

export async function auditProviderChaos({
  items,
  files,
  tasks,
  maxAttempts,
  startedAtMs,
}: AuditInput): Promise<ProviderChaosAudit> {
  const byPrompt = new Map<string, TaskTruth[]>();
  for (const task of tasks) byPrompt.set(task.prompt, [...(byPrompt.get(task.prompt) ?? []), task]);
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const audit: ProviderChaosAudit = {
    items: items.length,
    completed: 0,
    failed_by_provider: 0,
    items_lost: 0,
    items_expired: 0,
    images_bad: 0,
    images_matched_served: 0,
    images_gone_at_provider: 0,
    prompts_submitted_more_than_once: 0,
    extra_submissions: 0,
    deleted_unfetched: { attempt: 0, duplicate: 0 },
    unfetched_not_yet_deleted: 0,
    journal: journalFigures(
      await files.journal(),
      tasks.map((task) => ({ id: task.id, submitted_at_ms: task.submittedAtMs })),
    ),
    report_inconsistencies: 0,
    tasks_at_provider: tasks.length,
    resubmitted: [],
    slowest_fetches: slowestFetches(tasks, startedAtMs),
    problems: [],
  };
  const tally = new ReportTally(audit, 'provider');
  const { problem, inconsistent } = tally;
  const run = await tally.readRun(files, items.length);
  if (!run) return audit;

  const toCheck: ImageToCheck[] = [];
  for (const item of items) {
    const submitted = byPrompt.get(item.prompt) ?? [];
    const line = tally.lineOf(run, item.id, submitted.length);
    if (!line) continue;
    const extra = tally.extraTasks(line, submitted.length, () => ({
      id: item.id,
      attempts: line.attempts,
      submitted_s: submitted.map((task) => secondsAfter(startedAtMs, task.submittedAtMs)),
    }));
    countRetention(audit, submitted, extra);

    if (line.status === 'completed') {
      audit.completed++;
      const task = line.task_id === null ? undefined : byId.get(line.task_id);
      if (!task || task.prompt !== item.prompt || !task.succeeded || !task.fetched) {
        inconsistent(
          `${item.id}: reported completed with task ${line.task_id}, which the provider has as ` +
            (task
              ? `${task.succeeded ? 'succeeded' : 'not succeeded'}, ${task.fetched ? 'fetched' : 'never fetched'}${task.prompt !== item.prompt ? ', for another prompt' : ''}`
              : 'unknown'),
        );
        continue;
      }
      if (line.images.length === 0) {
        audit.images_bad++;
        problem(`${item.id}: completed without images`);
      }
      for (const image of line.images) toCheck.push({ item: item.id, ...image });
      continue;
    }
    if (line.status === 'expired') audit.items_expired++;
    const allFailed = submitted.length >= maxAttempts && submitted.every((task) => !task.succeeded);
    if (line.status === 'failed' && line.attempts === maxAttempts && allFailed) {
      audit.failed_by_provider++;
      continue;
    }
    audit.items_lost++;
    problem(
      `${item.id}: ${line.status} (${line.error?.code ?? 'no error'}: ${line.error?.message ?? ''}) after ` +
        `${line.attempts} attempts; tasks: ${submitted.map(describeTask).join(', ') || 'none'}`,
    );
  }
  const images = await checkImages(toCheck, files, problem);
  audit.images_bad += images.bad;
  audit.images_matched_served = images.matchedServed;
  audit.images_gone_at_provider = images.gone;
  for (const line of summaryCountInconsistencies(run.summary, run.lines)) inconsistent(line);
  return audit;
}

const SLOWEST_LISTED = 10;

function slowestFetches(
  tasks: readonly TaskTruth[],
  startedAtMs: number,
): ProviderChaosAudit['slowest_fetches'] {
  return tasks
    .filter((task) => task.succeeded && task.readyAtMs !== null && task.fetchedAtMs !== null)
    .map((task) => ({
      task: task.id,
      ready_s: secondsAfter(startedAtMs, task.readyAtMs!),
      fetched_s: secondsAfter(startedAtMs, task.fetchedAtMs!),
      lag_s: secondsAfter(task.readyAtMs!, task.fetchedAtMs!),
    }))
    .sort((a, b) => b.lag_s - a.lag_s)
    .slice(0, SLOWEST_LISTED);
}

const describeTask = (task: TaskTruth): string =>
  `${task.id} ${task.succeeded ? 'succeeded' : 'not succeeded'}${task.fetched ? ' fetched' : ''}${task.deletedUnfetched ? ' deleted unfetched' : ''}`;

/**
 * An item's succeeded tasks that nobody fetched. Which of them were its duplicates cannot be told
 * from the ground truth (the provider's tasks look alike); an item with `extra` tasks beyond its
 * attempts has that many duplicates among them, counted first.
 */
function countRetention(audit: ProviderChaosAudit, submitted: readonly TaskTruth[], extra: number): void {
  let duplicates = Math.max(0, extra);
  for (const task of submitted) {
    if (!task.succeeded || task.fetched) continue;
    if (!task.deletedUnfetched) {
      audit.unfetched_not_yet_deleted++;
      duplicates = Math.max(0, duplicates - 1);
      continue;
    }
    if (duplicates > 0) {
      audit.deleted_unfetched.duplicate++;
      duplicates--;
    } else audit.deleted_unfetched.attempt++;
  }
}

interface ImageToCheck {
  item: string;
  path: string;
  sha256: string;
  bytes: number;
  source_url: string;
  width?: number;
  height?: number;
}

const SERVED_TRIES = 5;

/** What the provider serves at `url` now: its bytes, or `gone` (404/403: retention over). */
async function served(url: string): Promise<Buffer | 'gone'> {
  for (let attempt = 1; ; attempt++) {
    try {
      const response = await request(url);
      const body = Buffer.from(await response.body.arrayBuffer());
      if (response.statusCode === 200) return body;
      if (response.statusCode === 404 || response.statusCode === 403) return 'gone';
      throw new Error(`GET ${url} answered ${response.statusCode}`);
    } catch (error) {
      // Truncated downloads and 5xx are the emulator's faults, still on: ask again.
      if (attempt >= SERVED_TRIES) throw error;
    }
  }
}

async function checkImages(
  images: ImageToCheck[],
  files: AuditFiles,
  problem: (line: string) => void,
): Promise<{ bad: number; matchedServed: number; gone: number }> {
  let bad = 0;
  let matchedServed = 0;
  let gone = 0;
  const paths = new Set<string>();
  const results = await mapLimit(images, 8, async (image) => {
    const bytes = await files.read(image.path);
    if (!bytes || bytes.length !== image.bytes || sha256(bytes) !== image.sha256)
      return `${image.path} ${bytes ? 'does not match its report entry' : 'is missing'}`;
    const decoded = await sharp(bytes, { failOn: 'truncated' })
      .raw()
      .toBuffer({ resolveWithObject: true })
      .catch(() => undefined);
    if (!decoded) return `${image.path} does not decode whole`;
    if (
      image.width !== undefined &&
      (decoded.info.width !== image.width || decoded.info.height !== image.height)
    )
      return `${image.path} is ${decoded.info.width}x${decoded.info.height}, reported ${image.width}x${image.height}`;
    const answer = await served(image.source_url).catch((error: unknown) => String(error));
    if (answer === 'gone') return 'gone';
    if (typeof answer === 'string') return `${image.path}: ${answer}`;
    if (sha256(answer) !== image.sha256) return `${image.path} differs from what ${image.source_url} serves`;
    return 'served';
  });
  images.forEach((image, k) => {
    if (paths.has(image.path)) {
      bad++;
      problem(`${image.item}: ${image.path} is reported twice`);
    }
    paths.add(image.path);
    const result = results[k]!;
    if (result === 'served') matchedServed++;
    else if (result === 'gone') gone++;
    else {
      bad++;
      problem(`${image.item}: ${result}`);
    }
  });
  return { bad, matchedServed, gone };
}
