// How the CLI shows an error the user can fix: its message, then every problem it found, in the
// text `main` writes to stderr (kept apart from main.ts, which runs the CLI when imported, so
// that tests of validation can check that text without starting a process per manifest).
import type { UserError } from '../common/errors.js';

const MAX_PROBLEMS_SHOWN = 200;

/** The lines `pixelmill` prints on stderr for `error`, each ending in a newline. */
export function userErrorText(error: UserError): string {
  // Every problem at once, but not a million lines: a broken catalog repeats itself.
  const lines = [
    `pixelmill: ${error.message}`,
    ...error.problems.slice(0, MAX_PROBLEMS_SHOWN).map((problem) => `  ${problem}`),
  ];
  const more = error.problems.length - MAX_PROBLEMS_SHOWN;
  if (more > 0) lines.push(`  ... and ${more} more problems`);
  return lines.map((line) => `${line}\n`).join('');
}
