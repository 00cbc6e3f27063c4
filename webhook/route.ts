// Where a webhook goes. The address a shard gives at submit names the shard workflow that owns the
// task, so the receiver needs no lookup table: a shard submits with
// `webhook = <public url>/hooks/<encodeURIComponent(shard workflow id)>` (workflows/shard.ts) and
// the service posts to that address plus `/callback` (spec 2.1, part 6).
import { RUN_WORKFLOW_PREFIX } from '../common/names.js';

const CALLBACK_PATH = /\/hooks\/([^/]+)\/callback\/?$/;
/** Only shard workflows take webhooks: `pixelmill/<name>/shard-NNNN` (common/names.ts). */
const SHARD_SUFFIX = /^[^/]+\/shard-\d{4,}$/;

/** The run's `webhookBaseUrl` for a receiver reachable at `publicUrl` (any path prefix kept). */
export function webhookBaseUrl(publicUrl: string): string {
  const url = new URL(publicUrl);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}/hooks`;
}

/**
 * The shard workflow id a callback path is addressed to, or undefined when the path is not a
 * callback of a shard. Any prefix before `/hooks` is accepted: a reverse proxy may keep its own.
 */
export function shardIdFromPath(pathname: string): string | undefined {
  const segment = CALLBACK_PATH.exec(pathname)?.[1];
  if (segment === undefined) return undefined;
  let workflowId: string;
  try {
    workflowId = decodeURIComponent(segment);
  } catch {
    return undefined;
  }
  const isShard =
    workflowId.startsWith(RUN_WORKFLOW_PREFIX) &&
    SHARD_SUFFIX.test(workflowId.slice(RUN_WORKFLOW_PREFIX.length));
  return isShard ? workflowId : undefined;
}
