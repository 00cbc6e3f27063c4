// Before a run is started or attached to, `run` makes sure a local output can take it: the folder
// can be created and written, and holds nothing but an earlier pixelmill output unless the user
// says so. Each problem is one line naming the folder, found before anything is submitted or paid
// for. An S3 output keeps nothing locally: writing its plan to the bucket is its check.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STATE_DIR_NAME } from '../runstate/index.js';
import { UserError } from '../common/errors.js';
import { fileErrorReason } from '../storage/errors.js';
import type { RunSettings } from '../manifest/normalize.js';

function cannotWrite(dir: string, error: unknown): UserError {
  return new UserError(
    'output_unwritable',
    `cannot write the output folder ${dir}: ${fileErrorReason(error)}`,
  );
}

/** Throws a UserError when the run could not write its output, or would mix it into other files. */
export function checkOutputFolder(settings: RunSettings, options: { force?: boolean } = {}): void {
  if (settings.objectStore) return;
  const dir = settings.outputDir;
  let entries: string[] = [];
  try {
    entries = readdirSync(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw cannotWrite(dir, error);
  }
  // A folder with a state folder is an earlier pixelmill output: running into it again is the point.
  const foreign = entries.filter((name) => name !== STATE_DIR_NAME);
  if (foreign.length > 0 && !entries.includes(STATE_DIR_NAME)) {
    if (!(options.force || settings.allowNonEmptyOutput)) {
      throw new UserError(
        'output_not_empty',
        `the output folder ${dir} already holds ${foreign.length} file${foreign.length === 1 ? '' : 's'} that pixelmill did not write ` +
          '(e.g. ' +
          foreign.slice(0, 3).join(', ') +
          '): name an empty or new folder, or pass --force (output.allow_non_empty: true) to write there anyway',
      );
    }
  }
  const probe = join(dir, STATE_DIR_NAME, `.write-check-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(join(dir, STATE_DIR_NAME), { recursive: true });
    writeFileSync(probe, '');
  } catch (error) {
    throw cannotWrite(dir, error);
  } finally {
    rmSync(probe, { force: true });
  }
}
