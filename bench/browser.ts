// A real headless Chromium, for the browser tests and the gallery benchmark: the build unpacked
// from @sparticuz/chromium by `npm install` / the tests' global setup
// (scripts/install-test-browser.mjs), or PIXELMILL_CHROMIUM to try another one.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

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

type BrowserInstall = typeof import('../scripts/install-test-browser.mjs');

/** The install script, from the sources (bench/) or from the build (dist/bench/). */
async function browserInstall(): Promise<BrowserInstall> {
  const root = ['../', '../../']
    .map((up) => new URL(up, import.meta.url))
    .find((dir) => existsSync(new URL('package.json', dir)));
  if (!root) throw new Error('cannot find the pixelmill folder above bench/');
  return (await import(new URL('scripts/install-test-browser.mjs', root).href)) as BrowserInstall;
}

export async function launchChromium(): Promise<Browser> {
  const { chromiumBinary, fontConfigFile } = await browserInstall();
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
