// Where a webhook goes. The address a shard gives at submit names the provider and the shard
// workflow that owns the task, so the receiver needs no lookup table: a shard submits with
// `webhook = <public url>/hooks/<provider>/<encodeURIComponent(shard workflow id)>`
// (workflows/shard.ts). The first API posts to that address plus `/callback` (spec part 6); the
// others post to the address as given. One receiver serves the runs of every provider.
import { RUN_WORKFLOW_PREFIX } from '../common/names.js';
import { isProviderName } from '../providers/registry.js';
import type { ProviderName } from '../providers/types.js';

const CALLBACK_PATH = /\/hooks\/([a-z]+)\/([^/]+?)(?:\/callback)?\/?$/;
/** Only shard workflows take webhooks: `pixelmill/<name>/shard-NNNN` (common/names.ts). */
const SHARD_SUFFIX = /^[^/]+\/shard-\d{4,}$/;

/** The run's `webhookBaseUrl` for a receiver reachable at `publicUrl` (any path prefix kept). */
export function webhookBaseUrl(publicUrl: string, provider: ProviderName): string {
  const url = new URL(publicUrl);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}/hooks/${provider}`;
}

/**
 * The provider and shard workflow id a webhook path is addressed to, or undefined when the path
 * is not a shard's. Any prefix before `/hooks` is accepted: a reverse proxy may keep its own.
 */
export function webhookTarget(pathname: string): { provider: ProviderName; workflowId: string } | undefined {
  const match = CALLBACK_PATH.exec(pathname);
  const provider = match?.[1];
  const segment = match?.[2];
  if (provider === undefined || segment === undefined || !isProviderName(provider)) return undefined;
  let workflowId: string;
  try {
    workflowId = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  const isShard =
    workflowId.startsWith(RUN_WORKFLOW_PREFIX) &&
    SHARD_SUFFIX.test(workflowId.slice(RUN_WORKFLOW_PREFIX.length));
  return isShard ? { provider, workflowId } : undefined;
}
