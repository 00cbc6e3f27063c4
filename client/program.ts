// The `pixelmill` command line: every command, on the root that prints errors and turns them into
// exit codes (program-root.ts). client/main.ts runs it; tests can ask it for help text without a
// process.
import type { Command } from 'commander';
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
import { rootProgram, runProgram } from './program-root.js';

export function buildProgram(): Command {
  const program = rootProgram();
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
  return runProgram(buildProgram(), argv);
}
