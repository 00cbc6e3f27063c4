// Where the CLI's Temporal comes from: the cluster Temporal's envconfig names (TEMPORAL_ADDRESS,
// a profile), or the embedded dev server under .pixelmill/, which outlives a killed CLI and is
// reused by the next command.
import { resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import {
  connectClient,
  devServerEndpoint,
  resolveTemporalTarget,
  type TemporalEndpoint,
} from '../temporal/connection.js';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { ensureDevServer } from '../temporal/dev-server.js';

export interface Session {
  mode: 'embedded' | 'external';
  client: Client;
  endpoint: TemporalEndpoint;
  /** The Temporal Web UI, when known: the embedded server's, or PIXELMILL_TEMPORAL_UI_URL for a cluster. */
  uiUrl?: string;
  close(): Promise<void>;
}

/** The embedded mode's state folder: `.pixelmill/` in the current directory. */
export function stateDirectory(env: NodeJS.ProcessEnv = process.env): string {
  return resolve(env.PIXELMILL_STATE_DIR ?? '.pixelmill');
}

export async function openSession(options: { log?: (line: string) => void } = {}): Promise<Session> {
  const target = await resolveTemporalTarget();
  if (target.mode === 'external') {
    const { client, close } = await connectClient(target);
    const uiUrl = process.env.PIXELMILL_TEMPORAL_UI_URL?.replace(/\/+$/, '') || undefined;
    return { mode: 'external', client, endpoint: target, close, ...(uiUrl ? { uiUrl } : {}) };
  }
  const server = await ensureDevServer({
    stateDir: stateDirectory(),
    searchAttributes: PIXELMILL_SEARCH_ATTRIBUTES,
    ...(options.log ? { log: options.log } : {}),
  });
  const endpoint = devServerEndpoint(server);
  const { client, close } = await connectClient(endpoint);
  return { mode: 'embedded', client, endpoint, uiUrl: server.uiUrl, close };
}

/** A link to a workflow in the Web UI. */
export function workflowUrl(session: Session, workflowId: string): string | undefined {
  if (!session.uiUrl) return undefined;
  return `${session.uiUrl}/namespaces/${encodeURIComponent(session.endpoint.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
