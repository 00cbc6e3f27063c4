// Checks several emulators' configs share beyond their schemas: account ids and API keys unique
// across a config, and a change to a running emulator's limits validated with every problem told.
import type { z } from 'zod';
import { formatPath } from '../../common/problems.js';
import { CONFIG_ROOT, isPlainObject, type ConfigProblem } from './config.js';

/**
 * `accounts[].id` and `accounts[].keys[].key` unique across the config; a ConfigSpec's
 * `extraProblems`. Checked on the raw input rather than in a zod refinement, which would only run
 * once everything else is valid and so hide these problems.
 */
export function duplicateAccountProblems(input: unknown): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!isPlainObject(input) || !Array.isArray(input.accounts)) return problems;
  const ids = new Set<unknown>();
  const keys = new Set<unknown>();
  input.accounts.forEach((account: unknown, i) => {
    if (!isPlainObject(account)) return;
    if (typeof account.id === 'string' && ids.has(account.id))
      problems.push({ path: ['accounts', i, 'id'], message: `duplicate account id "${account.id}"` });
    ids.add(account.id);
    if (!Array.isArray(account.keys)) return;
    account.keys.forEach((key: unknown, j) => {
      if (!isPlainObject(key) || typeof key.key !== 'string') return;
      // The key is a secret: name where the duplicate is, never its value.
      if (keys.has(key.key))
        problems.push({
          path: ['accounts', i, 'keys', j, 'key'],
          message: 'duplicate API key (already used above)',
        });
      keys.add(key.key);
    });
  });
  return problems;
}

/** A change (a PUT body) as `schema` reads it, or every problem as `path: message`, unknown keys named. */
export function validateChange<S extends z.ZodType>(
  schema: S,
  input: unknown,
): { change?: z.output<S>; problems: string[] } {
  const result = schema.safeParse(input);
  if (result.success) return { change: result.data, problems: [] };
  const problems = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => `${formatPath([...issue.path, key], CONFIG_ROOT)}: unknown key`)
      : [`${formatPath(issue.path, CONFIG_ROOT)}: ${issue.message}`],
  );
  return { problems };
}
