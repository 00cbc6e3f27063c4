// A real headless Chromium for the browser tests: the build unpacked from @sparticuz/chromium by
// the global setup (scripts/install-test-browser.mjs), or PIXELMILL_CHROMIUM to try another one.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { chromiumBinary, fontConfigFile } from '../../scripts/install-test-browser.mjs';

/**
 * Root needs --no-sandbox; the background-networking flags keep Chromium from calling out of a
 * machine whose only network is loopback.
 */
const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.PIXELMILL_CHROMIUM ?? chromiumBinary;
  if (!existsSync(executablePath)) {
    throw new Error(
      `Chromium is missing at ${executablePath}: run \`node scripts/install-test-browser.mjs\``,
    );
  }
  return chromium.launch({
    executablePath,
    args: ARGS,
    env: { ...process.env, FONTCONFIG_FILE: fontConfigFile },
  });
}
