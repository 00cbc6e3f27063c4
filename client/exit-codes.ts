// The exit codes of every pixelmill command, in one table: `pixelmill --help` prints it, and
// docs/cli.md repeats it (test/cli-commands.test.ts checks that the two agree).
export const EXIT_CODES: readonly (readonly [code: number, meaning: string])[] = [
  [0, 'success (run, watch, retry-failed: every item completed)'],
  [1, 'error: bad manifest or config, no such run, unreachable service, run failed'],
  [2, 'usage error: unknown command or option, missing or invalid argument'],
  [3, 'run, watch, retry-failed: the run ended with items not completed'],
  [4, 'run, watch: limits.deadline ended the run with items unfinished (retry-failed continues them)'],
  [130, 'interrupted while waiting (Ctrl-C); the run is durable and goes on'],
];

export function exitCodesHelp(): string {
  const rows = EXIT_CODES.map(([code, meaning]) => `  ${String(code).padEnd(4)}${meaning}`);
  return ['Exit codes:', ...rows].join('\n');
}
