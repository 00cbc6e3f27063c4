// The "Examples:" block of a command's help text. Its own module: a command that needs no
// Temporal (validate, plan) takes it without with-run.ts's session and run lookups.

/** The "Examples:" block of a command's --help. */
export function examples(...lines: string[]): string {
  return ['', 'Examples:', ...lines.map((line) => `  $ ${line}`)].join('\n');
}
