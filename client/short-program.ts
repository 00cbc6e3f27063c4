// A short command (program-root.ts SHORT_COMMANDS: validate, schema, plan) run alone: the root
// with its command only, so that neither the Temporal SDK nor the other commands' modules load.
// It parses and answers as the whole program (test/cli-short-commands.test.ts compares them).
import { registerPlanCommand } from './commands/plan.js';
import { registerValidateCommand } from './commands/validate.js';
import { rootProgram, runProgram } from './program-root.js';

/** Runs the command line `argv` (as process.argv), which names a short command. */
export async function main(argv: string[]): Promise<number> {
  const program = rootProgram();
  // In the whole program's order (plan before validate): the same help for either.
  registerPlanCommand(program);
  registerValidateCommand(program);
  return runProgram(program, argv);
}
