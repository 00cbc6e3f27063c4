// Assertion helpers shared by test files: the error a promise rejects with, and every way a value
// can end up as text (message, stack, JSON, inspect), to prove that a secret is in none of them.
import { inspect } from 'node:util';
import { expect } from 'vitest';

/** The value `promise` rejects with; fails the test when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** What logs, error reports and serialisers could print of `value`, hidden properties included. */
export function renderings(value: unknown): string[] {
  const texts = [JSON.stringify(value) ?? '', inspect(value, { depth: 10, showHidden: true })];
  if (value instanceof Error) texts.push(value.message, value.stack ?? '');
  return texts;
}

/** Asserts that no rendering of any of `values` contains any of `secrets`. */
export function expectNoSecrets(values: readonly unknown[], secrets: readonly string[]): void {
  for (const value of values) {
    for (const text of typeof value === 'string' ? [value] : renderings(value)) {
      for (const secret of secrets) expect(text).not.toContain(secret);
    }
  }
}
