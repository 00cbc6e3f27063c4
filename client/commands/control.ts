// Commands on an existing run: status, watch, pause, resume, cancel; and stopping the embedded
// Temporal dev server. RUN is the manifest file, the run id (`pixelmill/<name>`) or the name.
import type { Command } from 'commander';
import { cancelSignal, pauseSignal, resumeSignal } from '../../common/names.js';
import { stopDevServer } from '../../temporal/dev-server.js';
import { quietTemporalLogs } from '../embedded.js';
import { liveProgress, progressLine } from '../progress.js';
import { requireRun, resolveRunId, type RunHandle } from '../runs.js';
import { openSession, stateDirectory, workflowUrl, type Session } from '../session.js';
import { watchRun } from '../watch.js';

async function withRun<T>(run: string, body: (session: Session, runId: string) => Promise<T>): Promise<T> {
  quietTemporalLogs(false);
  const runId = resolveRunId(run);
  const session = await openSession();
  try {
    await requireRun(session.client, runId);
    return await body(session, runId);
  } finally {
    await session.close();
  }
}

const RUN_ARGUMENT = [
  '<run>',
  'the manifest file, the run id (pixelmill/<name>) or the manifest name',
] as const;

export function registerControlCommands(program: Command): void {
  program
    .command('status')
    .description("show a run's state, counts, credits and its Temporal Web UI link")
    .argument(...RUN_ARGUMENT)
    .option('--json', 'print the progress as JSON')
    .addHelpText(
      'after',
      '\nExamples:\n  $ pixelmill status manifests/demo.yaml\n  $ pixelmill status pixelmill/demo --json',
    )
    .action((run: string, options: { json?: boolean }) =>
      withRun(run, async (session, runId) => {
        const description = await session.client.workflow.getHandle(runId).describe();
        const running = description.status.name === 'RUNNING';
        const progress = running ? await liveProgress(session.client, runId) : undefined;
        const link = workflowUrl(session, runId);
        if (options.json) {
          process.stdout.write(
            `${JSON.stringify({ runId, status: description.status.name, progress, ui: link ?? null }, null, 2)}\n`,
          );
          return;
        }
        process.stdout.write(`${runId}: ${description.status.name.toLowerCase()}\n`);
        if (progress) process.stdout.write(`${progressLine(progress)}\n`);
        else if (description.status.name === 'COMPLETED') {
          const result = await session.client.workflow.getHandle(runId).result();
          process.stdout.write(`${JSON.stringify(result.counts)}; report ${result.reportFile}\n`);
        }
        if (link) process.stdout.write(`Temporal Web UI: ${link}\n`);
      }),
    );

  program
    .command('watch')
    .description('follow a run until it ends (exit code as for run)')
    .argument(...RUN_ARGUMENT)
    .option('--no-progress', 'print plain progress lines instead of redrawing')
    .action((run: string, options: { progress: boolean }) =>
      withRun(run, async (session, runId) => {
        const handle: RunHandle = session.client.workflow.getHandle(runId);
        process.exitCode = await watchRun(session.client, handle, {
          tty: options.progress && process.stderr.isTTY,
        });
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
      .action((run: string) =>
        withRun(run, async (session, runId) => {
          await session.client.workflow.getHandle(runId).signal(signal);
          process.stdout.write(`${runId}: ${name} requested\n`);
        }),
      );
  }

  program
    .command('server-stop')
    .description('stop the embedded Temporal dev server (its data stays in .pixelmill/)')
    .action(async () => {
      const stopped = await stopDevServer(stateDirectory());
      process.stdout.write(
        stopped
          ? 'pixelmill: the embedded Temporal dev server stopped\n'
          : 'pixelmill: no embedded Temporal dev server was running\n',
      );
    });
}
