// `npm run chaos -- --cluster`: the chaos run on a real Temporal cluster instead of the dev
// server, the one the tests use (test/support/cluster.ts: built from the Temporal server's Go
// module on first use, which takes minutes; PostgreSQL and four services as separate processes),
// started for the run, serving TLS with a CA made for it (test/support/cluster-certs.ts), with
// pixelmill's search attributes in its namespace, and stopped with the run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { PIXELMILL_SEARCH_ATTRIBUTES } from '../common/search-attributes.js';
import { ensureSearchAttributes } from '../temporal/server-admin.js';
import { makeTestCertificates } from '../test/support/cluster-certs.js';
import { clusterTools, startTemporalCluster } from '../test/support/cluster.js';
import { clusterTemporal, type ChaosTemporal } from './chaos-temporal.js';

export async function startChaosCluster(log: (line: string) => void): Promise<ChaosTemporal> {
  const installed = await clusterTools();
  if ('skip' in installed)
    throw new Error(`--cluster needs the Temporal server built from source: ${installed.skip}`);
  const certs = mkdtempSync(join(tmpdir(), 'pixelmill-chaos-certs-'));
  const cluster = await startTemporalCluster(installed.tools, { tls: makeTestCertificates(certs) });
  const stop = async (): Promise<void> => {
    await cluster.stop();
    rmSync(certs, { recursive: true, force: true });
  };
  try {
    const connection = await Connection.connect(cluster.connectionOptions);
    try {
      await ensureSearchAttributes(connection, cluster.namespace, PIXELMILL_SEARCH_ATTRIBUTES);
    } finally {
      await connection.close();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  log(
    `chaos: Temporal ${installed.tools.version} cluster on PostgreSQL at ${cluster.address} (TLS), ` +
      `started in ${(cluster.startMs / 1000).toFixed(1)} s`,
  );
  return clusterTemporal(cluster, cluster.namespace, stop);
}
