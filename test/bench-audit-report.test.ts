// What both chaos audits do alike with a finished run's report (bench/audit-report.ts): the run
// that did not finish, items missing from the report, tasks beyond an item's attempts, the lists
// capped, and summary.json's counts against the report.
import { describe, expect, it } from 'vitest';
import type { AuditFiles } from '../bench/audit-files.js';
import {
  MAX_LISTED,
  ReportTally,
  summaryCountInconsistencies,
  type ReportFigures,
} from '../bench/audit-report.js';
import type { Summary } from '../bench/catalog-audit.js';
import type { ReportLine } from '../report/report-line.js';

function figures(): ReportFigures<string> {
  return {
    items_lost: 0,
    prompts_submitted_more_than_once: 0,
    extra_submissions: 0,
    report_inconsistencies: 0,
    resubmitted: [],
    problems: [],
  };
}

function line(id: string, attempts: number, fields: Partial<ReportLine> = {}): ReportLine {
  return {
    id,
    status: 'completed',
    task_id: `task-${id}`,
    attempts,
    credits_cost: 1,
    images: [],
    error: null,
    ...fields,
  } as ReportLine;
}

function summary(counts: Partial<Summary['counts']>, images: number): Summary {
  return {
    counts: { completed: 0, failed: 0, cancelled: 0, expired: 0, skipped: 0, ...counts },
    images,
  } as Summary;
}

function filesOf(contents: Record<string, unknown>): AuditFiles {
  return {
    read: async (path) => {
      const value = contents[path];
      if (value === undefined) return undefined;
      const text = Array.isArray(value)
        ? value.map((entry) => `${JSON.stringify(entry)}\n`).join('')
        : JSON.stringify(value);
      return Buffer.from(text);
    },
    journal: async () => [],
  };
}

describe('a chaos audit reading a run report', () => {
  it('counts every item lost when the run left no summary', async () => {
    const audit = figures();
    const tally = new ReportTally(audit, 'API');
    const run = await tally.readRun(filesOf({ 'report.jsonl': [line('a', 1)] }), 3);
    expect(run).toBeUndefined();
    expect(audit.items_lost).toBe(3);
    expect(audit.problems).toEqual(['no report.jsonl or summary.json: the run did not finish']);
  });

  it('counts missing items as lost and tasks beyond the attempts, naming the host', async () => {
    const audit = figures();
    const tally = new ReportTally(audit, 'provider');
    const files = filesOf({
      'report.jsonl': [line('a', 1), line('b', 3)],
      'summary.json': summary({ completed: 2 }, 0),
    });
    const run = (await tally.readRun(files, 3))!;
    expect(run.lines.map(({ id }) => id)).toEqual(['a', 'b']);
    expect(tally.lineOf(run, 'c', 2)).toBeUndefined();
    expect(tally.extraTasks(tally.lineOf(run, 'a', 3)!, 3, () => 'a twice')).toBe(2);
    expect(tally.extraTasks(tally.lineOf(run, 'b', 1)!, 1, () => 'b')).toBe(-2);
    expect(audit).toEqual({
      items_lost: 1,
      prompts_submitted_more_than_once: 1,
      extra_submissions: 2,
      report_inconsistencies: 2,
      resubmitted: ['a twice'],
      problems: [
        'report has 2 lines for 3 items',
        'c: not in the report (2 tasks at the provider)',
        'b: 3 attempts reported but 1 tasks at the provider',
      ],
    });
  });

  it('lists at most MAX_LISTED problems and resubmitted items, and counts them all', async () => {
    const audit = figures();
    const tally = new ReportTally(audit, 'API');
    const lines = Array.from({ length: MAX_LISTED + 5 }, (_, k) => line(`i${k}`, 1));
    const run = (await tally.readRun(filesOf({ 'report.jsonl': lines, 'summary.json': summary({}, 0) }), 1))!;
    for (const entry of lines) {
      tally.extraTasks(entry, 2, () => entry.id);
      tally.inconsistent(`${entry.id}: wrong`);
    }
    expect(run.byId.size).toBe(MAX_LISTED + 5);
    expect(audit.prompts_submitted_more_than_once).toBe(MAX_LISTED + 5);
    expect(audit.resubmitted).toHaveLength(MAX_LISTED);
    expect(audit.report_inconsistencies).toBe(MAX_LISTED + 6);
    expect(audit.problems).toHaveLength(MAX_LISTED);
  });

  it("holds summary.json's counts by status and of images to the report", () => {
    const lines = [
      line('a', 1, { images: [{}, {}] as ReportLine['images'] }),
      line('b', 2, { status: 'failed' }),
    ];
    expect(summaryCountInconsistencies(summary({ completed: 1, failed: 1 }, 2), lines)).toEqual([]);
    expect(summaryCountInconsistencies(summary({ completed: 2, skipped: 1 }, 1), lines)).toEqual([
      'summary counts 2 completed, the report 1',
      'summary counts 0 failed, the report 1',
      'summary counts 1 skipped, the report 0',
      'summary counts 1 images, the report 2',
    ]);
  });
});
