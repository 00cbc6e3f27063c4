// `pixelmill report RUN`: rewrites a finished run's report.jsonl, summary.json and gallery from
// what is stored (plan and outcome files), folding in retries that have ended. Safe to repeat.
import type { Command } from 'commander';
import { rewriteReport, type RewrittenReport } from '../rewrite-report.js';
import { originalRunId } from '../retries.js';
import { locateRun } from '../run-files.js';
import { resolveRun } from '../runs.js';
import { examples, RUN_ARGUMENT, withRun } from './with-run.js';
import { plural } from '../../common/words.js';

export function describeReport(runId: string, report: RewrittenReport): string {
  const { counts } = report;
  const other = (['expired', 'cancelled', 'skipped'] as const)
    .filter((key) => counts[key] > 0)
    .map((key) => `, ${counts[key]} ${key}`)
    .join('');
  const lines = [
    `pixelmill: ${runId}: report written: ${counts.completed} completed, ${counts.failed} failed${other}; ` +
      `${plural(report.images, 'image')}; ${plural(report.creditsSpent, 'credit')}`,
    `pixelmill: report ${report.reportFile}`,
    `pixelmill: summary ${report.summaryFile}`,
  ];
  if (report.retries.length) {
    lines.push(`pixelmill: includes ${report.retries.map((retry) => retry.runId).join(', ')}`);
  }
  if (report.running) {
    lines.push(
      `pixelmill: ${report.running.runId} is still running: run \`pixelmill report\` again when it ends`,
    );
  }
  return lines.join('\n');
}

export function registerReportCommand(program: Command): void {
  program
    .command('report')
    .description("rewrite a finished run's report.jsonl, summary.json and gallery from what is stored")
    .argument(...RUN_ARGUMENT)
    .addHelpText(
      'after',
      examples('pixelmill report manifests/demo.yaml', 'pixelmill report pixelmill/demo') +
        '\n\nIncludes the outcomes of `pixelmill retry-failed` retries that have ended (a retry id' +
        '\nnames its run). Nothing is submitted and no workers are needed.' +
        '\nExit codes: 0 written, 1 error (no such run, still running, plan files missing).',
    )
    .action((run: string) => {
      const resolved = resolveRun(run);
      return withRun(
        { ...resolved, runId: originalRunId(resolved.runId) },
        async (session, runId, manifest) => {
          const location = await locateRun(session.client, runId, manifest);
          const report = await rewriteReport(session.client, location);
          process.stdout.write(`${describeReport(runId, report)}\n`);
        },
      );
    });
}
