// The browser tests' Chromium: the benchmark's launcher (bench/browser.ts).
export { launchChromium } from '../../bench/browser.js';
