// The root of pixelmill's errors, and the errors a user can fix (bad manifest, bad config,
// unreachable service). The CLI prints a UserError's message as one line, without a stack trace;
// anything else is a bug and keeps its stack.
//
// Every class sets `name` explicitly: Temporal matches failure types by name (common/failure-types.ts
// lists those that reach it), and bundlers or refactors must not be able to change it.
import type { ErrorSummary } from './types.js';

export abstract class PixelmillError extends Error {
  /** Stable, machine-readable identifier, lower-case, e.g. `config_invalid`. */
  abstract readonly code: string;
  /** Whether another attempt may succeed; the single source of truth for retry decisions. */
  abstract readonly retryable: boolean;
}

/** An error as the report's `{type, code, message}`: its name is the type. */
export function errorSummary(error: PixelmillError): ErrorSummary {
  return { type: error.name, code: error.code, message: error.message };
}

/** A summary plus what decides a retry (e.g. to build a Temporal ApplicationFailure). */
export interface FailureDetails extends ErrorSummary {
  retryable: boolean;
  /** How long the server asked us to wait (Retry-After), in milliseconds. */
  retryAfterMs?: number;
}

export class UserError extends PixelmillError {
  override name = 'UserError';
  readonly code: string;
  readonly retryable = false;
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
