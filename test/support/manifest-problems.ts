// The problems a manifest is refused with (its UserError's lines), for tests of validation.
import { isUserError, type UserError } from '../../common/errors.js';
import { loadManifest } from '../../manifest/load.js';

export function problemsOf(file: string): readonly string[] {
  try {
    loadManifest(file);
  } catch (error) {
    if (isUserError(error)) return (error as UserError).problems;
    throw error;
  }
  throw new Error('expected the manifest to be rejected');
}
