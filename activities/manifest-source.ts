// prepareFiring: the first activity of a schedule's firing (workflows/scheduled-run.ts). It reads
// the manifest where the schedule says (an s3:// URL or a path the workers read), validates it,
// and plans the run exactly as `pixelmill run` does on an edited manifest (the same loader, the
// same catalog plan against the output's index, the same frozen plan): new and changed items
// only. A manifest that cannot be read or is invalid fails the firing for good with its reason in
// one line, before anything is written to the output.
import { ApplicationFailure } from '@temporalio/activity';
import { describePlan, planCatalog } from '../client/catalog-plan.js';
import { checkOutputFolder } from '../client/output-check.js';
import { freezePlan } from '../client/run-files.js';
import { needsIncrementalRun, referenceHosting, requireReferenceUrl } from '../client/run-start.js';
import { isUserError, UserError } from '../common/errors.js';
import { runWorkflowId } from '../common/names.js';
import type { PrepareFiringInput, PreparedFiring } from '../common/schedules.js';
import type { RunInput } from '../common/types.js';
import { loadManifestAt } from '../manifest/store-source.js';
import { DEFAULT_PROVIDER } from '../providers/types.js';
import { isStorageError } from '../storage/errors.js';
import { webhookPublicUrl } from '../webhook/config.js';
import { webhookBaseUrl } from '../webhook/route.js';

/** A UserError in one line: its message, and its first problems when it lists some. */
export function oneLine(error: UserError): string {
  const { problems } = error;
  if (problems.length === 0) return error.message;
  const shown = problems.slice(0, 3).join('; ');
  return `${error.message}: ${shown}${problems.length > 3 ? `; and ${problems.length - 3} more` : ''}`;
}

/** The manifest of a firing is missing, unreadable or invalid: the firing fails with why, for good. */
function unusable(error: UserError): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'ManifestUnusableError',
    message: oneLine(error),
    nonRetryable: true,
  });
}

export function prepareFiringActivity(deps: { env: NodeJS.ProcessEnv }) {
  return async function prepareFiring(input: PrepareFiringInput): Promise<PreparedFiring> {
    const prune = Boolean(input.prune);
    let at;
    try {
      at = await loadManifestAt(input.manifest, { env: deps.env });
    } catch (error) {
      // A store that is down may come back: Temporal retries those (workflows/scheduled-run.ts).
      if (isStorageError(error) && error.retryable)
        throw ApplicationFailure.retryable(error.message, error.name);
      if (isStorageError(error)) throw unusable(new UserError(error.code, error.message));
      throw isUserError(error) ? unusable(error) : error;
    }
    try {
      const loaded = at.manifest;
      const { settings } = loaded;
      const runId = runWorkflowId(settings.name);
      try {
        checkOutputFolder(settings);
        referenceHosting(loaded, deps.env);
        requireReferenceUrl(loaded);
      } catch (error) {
        throw isUserError(error) ? unusable(error) : error;
      }
      let webhookBase: string | undefined;
      if (settings.webhooks) {
        const publicUrl = webhookPublicUrl(settings.webhooks.publicUrl, deps.env);
        if (!publicUrl)
          throw unusable(
            new UserError(
              'webhook_url_missing',
              'webhooks are enabled: set PIXELMILL_WEBHOOK_URL on the workers (or webhooks.public_url) to where `pixelmill webhook-server` is reached',
            ),
          );
        webhookBase = webhookBaseUrl(publicUrl, settings.provider ?? DEFAULT_PROVIDER);
      }
      const catalog = await planCatalog(loaded, { prune });
      if (catalog.diff.basis && !needsIncrementalRun(catalog, loaded.hash, prune)) {
        return { runId, unchanged: `nothing changed since ${catalog.diff.basis.run}` };
      }
      const plan = await freezePlan(loaded, catalog.incremental);
      const runInput: RunInput = {
        plan,
        manifestHash: loaded.hash,
        apiAccount: input.api.account,
        apiBaseUrl: input.api.baseUrl,
        emulated: input.api.emulated,
        ...(webhookBase ? { webhookBaseUrl: webhookBase } : {}),
        ...(settings.notify ? { notify: settings.notify } : {}),
        schedule: input.schedule,
      };
      return {
        runId,
        name: settings.name,
        manifestFile: settings.manifestFile,
        input: runInput,
        plan: describePlan(catalog, prune),
        itemCount: loaded.items.length,
      };
    } finally {
      await at.release();
    }
  };
}
