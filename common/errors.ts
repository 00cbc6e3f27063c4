// Errors a user can fix (bad manifest, bad config, unreachable service). The CLI prints their
// message as one line, without a stack trace; anything else is a bug and keeps its stack.

export class UserError extends Error {
  override name = 'UserError';
  /** Stable, machine-readable identifier, e.g. `config_invalid`. */
  readonly code: string;
  /** Every problem found, each `where: what` (for config and manifest validation). */
  readonly problems: readonly string[];

  constructor(code: string, message: string, problems: readonly string[] = []) {
    super(message);
    this.code = code;
    this.problems = problems;
  }
}

export function isUserError(error: unknown): error is UserError {
  return error instanceof UserError;
}

/** The message of anything thrown, for a one-line log. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
