// What starting a run of a loaded manifest decides before anything is submitted, shared by
// `pixelmill run` (commands/run.ts) and a schedule's firing (activities/manifest-source.ts), so
// that a scheduled run is planned exactly as a run by hand: whether a finished catalog needs an
// incremental run, and whether the provider can reach the manifest's local reference images.
import { join } from 'node:path';
import { UserError } from '../common/errors.js';
import { plural } from '../common/words.js';
import type { LoadedManifest } from '../manifest/load.js';
import { STATE_DIR_NAME } from '../manifest/schema.js';
import { PUBLIC_URL_ENV } from '../references/host.js';
import { REFERENCES_DIR } from '../references/reference-uri.js';
import type { CatalogPlan } from './catalog-plan.js';

/**
 * A local output's reference images are served where the CLI says: output.public_url, else
 * PIXELMILL_PUBLIC_URL in this environment (frozen into the plan, so workers need not have it).
 */
export function referenceHosting(loaded: LoadedManifest, env: NodeJS.ProcessEnv): void {
  const { settings } = loaded;
  const fromEnv = env[PUBLIC_URL_ENV];
  if (loaded.references.length === 0 || settings.objectStore || settings.publicUrl || !fromEnv) return;
  if (!/^https?:\/\/[^?#]+$/i.test(fromEnv) || !URL.canParse(fromEnv))
    throw new UserError(
      'config_invalid',
      `${PUBLIC_URL_ENV}=${fromEnv} is not an http(s) URL without query or fragment`,
    );
  settings.publicUrl = fromEnv;
}

/** With a cluster, a local output's reference images need an address the provider can reach. */
export function requireReferenceUrl(loaded: LoadedManifest): void {
  const { settings, references } = loaded;
  if (references.length === 0 || settings.objectStore || settings.publicUrl) return;
  throw new UserError(
    'references_unhosted',
    `${plural(references.length, 'local reference image')} and a local output: with a Temporal cluster the provider cannot fetch them from this machine; use an s3:// output, or set output.public_url (or ${PUBLIC_URL_ENV}) to where ${join(settings.outputDir, STATE_DIR_NAME, REFERENCES_DIR)}/ is served`,
  );
}

/**
 * Whether a finished catalog run is to be followed by an incremental one: its manifest changed,
 * stored files went missing, or removed results are to be pruned.
 */
export function needsIncrementalRun(catalog: CatalogPlan, manifestHash: string, prune: boolean): boolean {
  const { basis, counts } = catalog.diff;
  if (!basis) return false;
  return (
    basis.manifest_hash !== manifestHash ||
    counts.restore + counts.regenerate > 0 ||
    (prune && counts.unused > 0)
  );
}
