// The root of the `pixelmill` command line, shared by the whole program (program.ts) and by a
// short command run alone (short-program.ts): its name and options, and the one place that
// prints errors and turns them into exit codes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command, CommanderError } from 'commander';
import { isUserError } from '../common/errors.js';
import { projectRoot } from '../temporal/binaries.js';
import { userErrorText } from './user-error-text.js';

/**
 * Commands that need no Temporal, no S3 client for a local output, no other command: run by
 * name, they are registered alone (client/main.ts), and a 100,000-product validate does not wait
 * about a second for every other command's modules to load (BENCHMARKS.md, issue #40).
 */
export const SHORT_COMMANDS: ReadonlySet<string> = new Set(['validate', 'schema', 'plan']);

/** The command `argv` (as process.argv) names: its first word that is not an option (`--debug`). */
export function commandName(argv: readonly string[]): string | undefined {
  return argv.slice(2).find((word) => !word.startsWith('-'));
}

function packageVersion(): string {
  const file = join(projectRoot(), 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/** The program without its commands. */
export function rootProgram(): Command {
  return new Command('pixelmill')
    .description('Durable catalog image generation on Temporal')
    .version(packageVersion(), '-V, --version', 'print the version of pixelmill')
    .option('--debug', 'print stack traces for errors')
    .showHelpAfterError('(pixelmill --help lists the commands and options)')
    .exitOverride();
}

/** Runs `program` on the command line `argv` (as process.argv) and returns the exit code. */
export async function runProgram(program: Command, argv: string[]): Promise<number> {
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
