// What both chaos audits (bench/chaos-audit.ts against the first API's emulator,
// bench/providers-chaos-audit.ts against a provider's) do alike with a finished run's report:
// read report.jsonl and summary.json together, list the first problems found and count the
// report's inconsistencies, count an item absent from the report as lost, count the tasks an
// item's prompt got beyond its attempts, and hold summary.json's counts to the report.
import type { ReportLine } from '../report/report-line.js';
import type { AuditFiles } from './audit-files.js';
import { parseReport, type Summary } from './catalog-audit.js';

/** How many problems, and items submitted more than once, an audit lists. */
export const MAX_LISTED = 20;

/** The figures of an audit that its report reading counts into, `Resubmitted` its entry per item. */
export interface ReportFigures<Resubmitted> {
  items_lost: number;
  prompts_submitted_more_than_once: number;
  extra_submissions: number;
  report_inconsistencies: number;
  resubmitted: Resubmitted[];
  problems: string[];
}

/** A finished run's report: its lines as written, by item id, and its summary. */
export interface FinishedRun {
  lines: ReportLine[];
  byId: Map<string, ReportLine>;
  summary: Summary;
}

/** Reads a run's report into an audit's figures; `host` names who created the tasks (`API`, `provider`). */
export class ReportTally<Resubmitted> {
  constructor(
    private readonly audit: ReportFigures<Resubmitted>,
    private readonly host: string,
  ) {}

  /** Lists a problem, while fewer than MAX_LISTED are. */
  readonly problem = (line: string): void =>
    void (this.audit.problems.length < MAX_LISTED && this.audit.problems.push(line));

  /** A report or summary entry that contradicts the ground truth or another: counted and listed. */
  readonly inconsistent = (line: string): void => {
    this.audit.report_inconsistencies++;
    this.problem(line);
  };

  /**
   * report.jsonl and summary.json, the report checked for one line per item; undefined when
   * either is missing (the run did not finish), every item then counted lost.
   */
  async readRun(files: AuditFiles, items: number): Promise<FinishedRun | undefined> {
    const [reportBytes, summaryBytes] = await Promise.all([
      files.read('report.jsonl'),
      files.read('summary.json'),
    ]);
    if (!reportBytes || !summaryBytes) {
      this.audit.items_lost = items;
      this.problem('no report.jsonl or summary.json: the run did not finish');
      return undefined;
    }
    const lines = parseReport(reportBytes.toString('utf8'));
    const byId = new Map(lines.map((line) => [line.id, line]));
    if (byId.size !== items) this.inconsistent(`report has ${byId.size} lines for ${items} items`);
    const summary = JSON.parse(summaryBytes.toString('utf8')) as Summary;
    return { lines, byId, summary };
  }

  /** The item's report line; an item without one is lost (`tasks`: how many its prompt got). */
  lineOf(run: FinishedRun, id: string, tasks: number): ReportLine | undefined {
    const line = run.byId.get(id);
    if (!line) {
      this.audit.items_lost++;
      this.problem(`${id}: not in the report (${tasks} tasks at the ${this.host})`);
    }
    return line;
  }

  /**
   * The tasks an item's prompt got beyond its attempts (negative: fewer, which contradicts the
   * report); an item with more is listed by `resubmitted` while fewer than MAX_LISTED are.
   */
  extraTasks(line: ReportLine, tasks: number, resubmitted: () => Resubmitted): number {
    const extra = tasks - line.attempts;
    if (extra > 0) {
      this.audit.prompts_submitted_more_than_once++;
      this.audit.extra_submissions += extra;
      if (this.audit.resubmitted.length < MAX_LISTED) this.audit.resubmitted.push(resubmitted());
    } else if (extra < 0) {
      this.inconsistent(
        `${line.id}: ${line.attempts} attempts reported but ${tasks} tasks at the ${this.host}`,
      );
    }
    return extra;
  }
}

/** Seconds from `startedAtMs` to `ms`, to a tenth. */
export function secondsAfter(startedAtMs: number, ms: number): number {
  return Math.round((ms - startedAtMs) / 100) / 10;
}

/** summary.json's counts by status and of images against the report's lines. */
export function summaryCountInconsistencies(summary: Summary, lines: readonly ReportLine[]): string[] {
  const found: string[] = [];
  const count = (status: string): number => lines.filter((line) => line.status === status).length;
  for (const status of ['completed', 'failed', 'cancelled', 'expired', 'skipped'] as const) {
    if (summary.counts[status] !== count(status))
      found.push(`summary counts ${summary.counts[status]} ${status}, the report ${count(status)}`);
  }
  const images = lines.reduce((sum, line) => sum + line.images.length, 0);
  if (summary.images !== images) found.push(`summary counts ${summary.images} images, the report ${images}`);
  return found;
}
