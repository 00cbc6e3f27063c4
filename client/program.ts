// The `pixelmill` command line: its commands, and the one place that prints errors and turns
// them into exit codes. client/main.ts runs it; tests can ask it for help text without a process.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { isUserError } from '../common/errors.js';
import { projectRoot } from '../temporal/binaries.js';
import { registerEmulatorCommand } from './commands/emulator.js';
import { registerInitCommand } from './commands/init.js';
import { registerValidateCommand } from './commands/validate.js';
import { registerPlanCommand } from './commands/plan.js';
import { registerRunCommand } from './commands/run.js';
import { registerControlCommands } from './commands/control.js';
import { registerScheduleCommand } from './commands/schedule.js';
import { exitCodesHelp } from './exit-codes.js';
import { registerWorkerCommand } from './commands/worker.js';
import { registerWebhookServerCommand } from './commands/webhook-server.js';
import { registerSetupCommand } from './commands/setup.js';
import { userErrorText } from './user-error-text.js';

function packageVersion(): string {
  const file = join(projectRoot(), 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

export function buildProgram(): Command {
  const program = new Command('pixelmill')
    .description('Durable catalog image generation on Temporal')
    .version(packageVersion(), '-V, --version', 'print the version of pixelmill')
    .option('--debug', 'print stack traces for errors')
    .showHelpAfterError('(pixelmill --help lists the commands and options)')
    .exitOverride();
  registerRunCommand(program);
  registerPlanCommand(program);
  registerControlCommands(program);
  registerScheduleCommand(program);
  program.addHelpText(
    'after',
    `\nExamples:\n  $ pixelmill run manifests/demo.yaml\n  $ pixelmill list\n  $ pixelmill <command> --help\n\n${exitCodesHelp()}\nErrors are one line on stderr; --debug adds the stack trace.`,
  );
  registerInitCommand(program);
  registerValidateCommand(program);
  registerSetupCommand(program);
  registerWorkerCommand(program);
  registerEmulatorCommand(program);
  registerWebhookServerCommand(program);
  return program;
}

/** Runs the command line `argv` (as process.argv) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return Number(process.exitCode ?? 0);
  } catch (error) {
    // Commander has printed the usage problem (or the help, exit code 0).
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (isUserError(error)) {
      process.stderr.write(userErrorText(error));
      return 1;
    }
    const debug = program.opts<{ debug?: boolean }>().debug;
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    process.stderr.write(`pixelmill: ${debug && error instanceof Error ? error.stack : message}\n`);
    return 1;
  }
}
