// Commands on runs that exist: status, list, watch, pause, resume, cancel, retry-failed, report;
// and stopping the embedded Temporal dev server. RUN is the manifest file, the run id (`pixelmill/<name>`) or the name.
import type { Command } from 'commander';
import { cancelSignal, pauseSignal, resumeSignal } from '../../common/names.js';
import { stopDevServer } from '../../temporal/dev-server.js';
import type { RunHandle } from '../runs.js';
import { stateDirectory } from '../session.js';
import { watchRun } from '../watch.js';
import { registerListCommand } from './list.js';
import { registerReportCommand } from './report.js';
import { registerRetryFailedCommand } from './retry-failed.js';
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
    program
      .command(name)
      .description(description)
      .argument(...RUN_ARGUMENT)
      .addHelpText(
        'after',
        examples(`pixelmill ${name} manifests/demo.yaml`, `pixelmill ${name} pixelmill/demo`),
      )
      .action((run: string) =>
        withRun(run, async (session, runId) => {
          await session.client.workflow.getHandle(runId).signal(signal);
          process.stdout.write(`${runId}: ${name} requested\n`);
        }),
      );
  }

  registerRetryFailedCommand(program);
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
