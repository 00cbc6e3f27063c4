#!/usr/bin/env node
// Unpacks the headless Chromium that the browser tests drive (test/support/browser.ts) into
// .tools/chromium (git-ignored). The binary comes from the npm registry inside the dev dependency
// @sparticuz/chromium (brotli-compressed), so `npm install && npm test` needs no system package.
//
// The package unpacks into os.tmpdir(), where parallel test files would race and a killed
// unpacking would leave a half-written binary that it takes for a whole one. So this process
// points TMPDIR at a fresh staging folder and renames it into place only when it is complete:
// concurrent callers either find the finished folder or lose the rename and drop their copy.
//
// Run by the tests' global setup (test/support/global-setup.ts); idempotent.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { invokedDirectly, say, toolsDir } from './pypi-tools.mjs';

export const browserDir = join(toolsDir, 'chromium');
export const chromiumBinary = join(browserDir, 'chromium');
/** fontconfig's configuration: the fonts the package ships, then the system's if there are any. */
export const fontConfigFile = join(browserDir, 'fonts.conf');
const markerFile = join(browserDir, 'pixelmill-installed.json');

function packageVersion() {
  const require = createRequire(import.meta.url);
  // The package exports no ./package.json: it sits one folder above the entry (build/index.js).
  const entry = require.resolve('@sparticuz/chromium');
  return JSON.parse(readFileSync(join(dirname(entry), '..', 'package.json'), 'utf8')).version;
}

function installedVersion() {
  try {
    return JSON.parse(readFileSync(markerFile, 'utf8')).version;
  } catch {
    return undefined;
  }
}

function fontConfig(dir) {
  return `<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>${join(dir, 'fonts')}</dir>
  <cachedir>${join(dir, 'fonts-cache')}</cachedir>
</fontconfig>
`;
}

/** Returns the path of the Chromium binary, unpacking it first when needed. */
export async function installTestBrowser() {
  const version = packageVersion();
  if (installedVersion() === version && existsSync(chromiumBinary)) return chromiumBinary;
  mkdirSync(toolsDir, { recursive: true });
  const staging = mkdtempSync(join(toolsDir, 'chromium-staging-'));
  try {
    say(`unpacking the test browser (@sparticuz/chromium ${version}) into ${browserDir}, once`);
    const previousTmp = process.env.TMPDIR;
    process.env.TMPDIR = staging;
    try {
      const { default: Chromium } = await import('@sparticuz/chromium');
      await Chromium.executablePath();
    } finally {
      if (previousTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = previousTmp;
    }
    writeFileSync(join(staging, 'fonts.conf'), fontConfig(browserDir));
    writeFileSync(join(staging, 'pixelmill-installed.json'), JSON.stringify({ version }));
    if (installedVersion() === version) return chromiumBinary; // another process finished first
    rmSync(browserDir, { recursive: true, force: true });
    try {
      renameSync(staging, browserDir);
    } catch (error) {
      // Another process put a complete copy there first.
      if (!existsSync(chromiumBinary)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return chromiumBinary;
}

if (invokedDirectly(import.meta.url)) {
  installTestBrowser().then(
    () => undefined,
    (error) => {
      say(`could not unpack the test browser: ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    },
  );
}
