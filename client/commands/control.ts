// Commands on runs that exist: status, list, watch, pause, resume, cancel, retry-failed, report;
// and stopping the embedded Temporal dev server. RUN is the manifest file, the run id (`pixelmill/<name>`) or the name.
// A request no worker is there to take says so, with the command that would serve the run;
// `cancel --force` terminates a stuck run and writes its report from what is recorded.
import { join } from 'node:path';
import type { Command } from 'commander';
import { cancelSignal, pauseSignal, resumeSignal } from '../../common/names.js';
import { errorMessage, UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';
import { stopDevServer } from '../../temporal/dev-server.js';
import type { LoadedManifest } from '../../manifest/load.js';
import { originalRunId } from '../retries.js';
import { rewriteReport } from '../rewrite-report.js';
import { locateRun } from '../run-files.js';
import { executionOf, runningShards, serveCommand, terminateRun, workersServing } from '../run-control.js';
import { requireRun, type RunHandle } from '../runs.js';
import { stateDirectory, type Session } from '../session.js';
import { watchRun } from '../watch.js';
import { registerListCommand } from './list.js';
import { describeReport, registerReportCommand } from './report.js';
import { registerRetryFailedCommand } from './retry-failed.js';
import { registerRedoCommand } from './redo.js';
import { registerStatusCommand } from './status.js';
import { examples, RUN_ARGUMENT, withRun } from './with-run.js';

export function registerControlCommands(program: Command): void {
  registerStatusCommand(program);
  registerListCommand(program);

  program
    .command('watch')
    .description('follow a run until it ends: live progress, then its summary')
    .argument(...RUN_ARGUMENT)
    .option('--no-progress', 'print plain progress lines instead of redrawing')
    .addHelpText(
      'after',
      examples(
        'pixelmill watch manifests/demo.yaml',
        'pixelmill watch pixelmill/demo --no-progress > watch.log',
      ) +
        '\n\nThe display redraws in place on a terminal; piped, or with --no-progress, it prints a line' +
        '\nwhen the counts change (at most every 5 s). NO_COLOR=1 turns colours off.' +
        '\nExit codes: 0 every item completed, 3 the run ended with items not completed, 1 error.',
    )
    .action((run: string, options: { progress: boolean }) =>
      withRun(run, async (session, runId) => {
        const handle: RunHandle = session.client.workflow.getHandle(runId);
        process.exitCode = await watchRun(session.client, handle, { tty: options.progress });
      }),
    );

  const signals = [
    ['pause', pauseSignal, 'stop submitting new items; tasks in flight are still collected'],
    ['resume', resumeSignal, 'continue a paused run (also after a 402: top up credits first)'],
    ['cancel', cancelSignal, 'submit nothing new; collect what is in flight; report the rest as cancelled'],
  ] as const;
  for (const [name, signal, description] of signals) {
    const command = program
      .command(name)
      .description(description)
      .argument(...RUN_ARGUMENT)
      .addHelpText(
        'after',
        examples(
          `pixelmill ${name} manifests/demo.yaml`,
          `pixelmill ${name} pixelmill/demo`,
          ...(name === 'cancel' ? ['pixelmill cancel pixelmill/demo --force'] : []),
        ) +
          '\n\nA worker serving the run acts on it; with none (an embedded run whose `pixelmill run` is not' +
          '\nrunning), it waits, and the command says how to start one. `pixelmill status RUN` shows it pending.' +
          (name === 'cancel'
            ? '\n--force terminates the run and its shards at once, without a worker: tasks already at the API' +
              '\nkeep running there (and may be charged) but are not collected; stored images stay; the report is' +
              '\nwritten from what was recorded.'
            : ''),
      );
    if (name === 'cancel') {
      command.option(
        '--force',
        'terminate the run and its shards now (for a stuck run): nothing more is collected',
      );
    }
    command.action((run: string, options: { force?: boolean }) =>
      withRun(run, async (session, runId, manifest) => {
        if (options.force) await forceCancel(session, runId, manifest);
        else await request(session, runId, name, signal);
      }),
    );
  }

  registerRetryFailedCommand(program);
  registerRedoCommand(program);
  registerReportCommand(program);

  program
    .command('server-stop')
    .description('stop the embedded Temporal dev server (its data stays in .pixelmill/)')
    .addHelpText('after', examples('pixelmill server-stop'))
    .action(async () => {
      const stopped = await stopDevServer(stateDirectory());
      process.stdout.write(
        stopped
          ? 'pixelmill: the embedded Temporal dev server stopped\n'
          : 'pixelmill: no embedded Temporal dev server was running\n',
      );
    });
}

const say = (line: string): void => void process.stdout.write(`pixelmill: ${line}\n`);

async function runningRun(session: Session, runId: string, what: string) {
  const description = await requireRun(session.client, runId);
  if (description.status.name !== 'RUNNING') throw hasEnded(runId, description.status.name, what);
  return description;
}

function hasEnded(runId: string, status: string, what: string): UserError {
  return new UserError('run_not_running', `${runId} has ended (${status.toLowerCase()}): nothing to ${what}`);
}

/**
 * The run, if it runs; if it has ended, with the shards it started that still run (a run
 * terminated from Temporal's UI), and refused when there are none.
 */
async function runOrItsShardsRunning(session: Session, runId: string) {
  const description = await requireRun(session.client, runId);
  const run = executionOf(description);
  if (run.status === 'RUNNING') return { description };
  const shards = await runningShards(session.client, run);
  if (shards.length === 0) throw hasEnded(runId, run.status, 'cancel');
  return { description, shards };
}

async function request(
  session: Session,
  runId: string,
  name: 'pause' | 'resume' | 'cancel',
  signal: typeof pauseSignal | typeof resumeSignal | typeof cancelSignal,
): Promise<void> {
  const description = await runningRun(session, runId, name);
  await session.client.workflow.getHandle(runId, description.runId).signal(signal);
  // Sent either way; where the pollers cannot be read (a restricted cluster role), say no more.
  const workers = await workersServing(session.client, description).catch(() => undefined);
  if (workers !== 0) {
    say(`${runId}: ${name} requested`);
    return;
  }
  say(
    `${runId}: ${name} requested; it takes effect when a worker serves the run ` +
      `(start one with: ${serveCommand(session.mode, runId, description)})`,
  );
}

/** `cancel --force`: what it means, first; then the run and its shards terminated, and its report. */
async function forceCancel(session: Session, runId: string, manifest?: LoadedManifest): Promise<void> {
  const { description, shards: left } = await runOrItsShardsRunning(session, runId);
  const location = await locateRun(session.client, runId, manifest).catch(() => undefined);
  const runEnded = left !== undefined;
  const what = runEnded ? 'the shards it left running' : 'the run and its shards';
  say(`${runId}: terminating ${what} (cancel --force): nothing more is submitted, tracked or stored`);
  const journal = location
    ? ` (their task ids are in ${location.plan.objectStore ? `${location.plan.stateDir}/submits` : join(location.plan.stateDir, 'submits')})`
    : '';
  say(`tasks already at the API keep running there and may be charged, but are not collected${journal}`);
  say('images already stored stay where they are, and in the report');
  const shards = await terminateRun(session.client, description, 'pixelmill cancel --force', left);
  if (runEnded) say(`${runId}: ${plural(shards.length, 'shard')} terminated`);
  else say(`${runId}: terminated${shards.length ? `, with ${plural(shards.length, 'shard')}` : ''}`);
  // A retry is reported as part of its run: the run's report folds it in.
  const reported = originalRunId(runId);
  try {
    const again = location?.manifest ?? manifest;
    const report = await rewriteReport(session.client, await locateRun(session.client, reported, again));
    process.stdout.write(`${describeReport(reported, report)}\n`);
    if (report.counts.cancelled > 0) {
      say(
        'items it had not finished are reported cancelled (not_run), and are not retried; ' +
          `\`pixelmill retry-failed ${reported}\` runs the failed items again`,
      );
    }
  } catch (error) {
    say(
      `no report written: ${errorMessage(error)}; \`pixelmill report ${reported}\` writes it from what is stored`,
    );
  }
}
