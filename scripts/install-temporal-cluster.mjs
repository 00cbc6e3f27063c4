#!/usr/bin/env node
// Builds the Temporal server (`temporal-server`) and its SQL schema tool (`temporal-sql-tool`)
// from the server's Go module, at the version docker-compose.yml pins for its `temporal` image,
// into .tools/temporal-cluster/<version>/ (git-ignored), with the PostgreSQL schemas the tool
// applies beside them at the path they have in the admin-tools image (schema/postgresql/v12).
// The cluster tests (test/support/cluster.ts) run these; users of pixelmill never need them.
//
// No prebuilt server binary comes from a package registry, but the Go module proxy serves the
// server's source: one `go build` of both commands, about 3 minutes on two idle cores, once.
//
// Parallel test files call this at once: the first takes a lock file (its pid inside), the others
// wait for it to go and then find the finished folder. The build goes to a staging folder renamed
// into place only when complete, so a killed build never leaves a half folder taken for whole; a
// lock whose process is gone is taken over.
//
// The cluster also needs Debian's PostgreSQL server: installed here with apt-get when missing
// (as root; otherwise the message says what to install).
//
// Exit codes: 0 installed, 1 the build or PostgreSQL's install failed, 3 no Go toolchain on this
// machine (the tests skip on that one only, saying so).
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { parse } from 'yaml';
import { invokedDirectly, say, toolsDir } from './pypi-tools.mjs';

const MODULE = 'go.temporal.io/server';
const composeFile = join(dirname(fileURLToPath(import.meta.url)), '..', 'docker-compose.yml');
export const NO_GO_EXIT_CODE = 3;

/** The server version the compose stack runs: the tag of its `temporal` service's image. */
export function pinnedServerVersion() {
  const compose = parse(readFileSync(composeFile, 'utf8'));
  const image = String(compose?.services?.temporal?.image ?? '');
  const match = /^temporalio\/server:(\d+\.\d+\.\d+)$/.exec(image);
  if (!match)
    throw new Error(`docker-compose.yml: services.temporal.image is "${image}", not temporalio/server:X.Y.Z`);
  return match[1];
}

/** Where a version's binaries and schemas live once built. */
export function clusterToolsOf(version = pinnedServerVersion()) {
  const dir = join(toolsDir, 'temporal-cluster', version);
  return {
    version,
    dir,
    server: join(dir, 'bin', 'temporal-server'),
    sqlTool: join(dir, 'bin', 'temporal-sql-tool'),
    /** As /etc/temporal/schema/postgresql/v12 in the temporalio/admin-tools image. */
    schemaDir: join(dir, 'schema', 'postgresql', 'v12'),
    marker: join(dir, 'pixelmill-installed.json'),
    log: join(toolsDir, 'temporal-cluster', `${version}-build.log`),
  };
}

export function isInstalled(tools) {
  return existsSync(tools.marker) && existsSync(tools.server) && existsSync(tools.sqlTool);
}

/** The `go` command's version line, or undefined when there is no Go toolchain. */
function goVersion() {
  const result = spawnSync(process.env.PIXELMILL_GO || 'go', ['version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/** Runs go with `args`, its output appended to `log`; resolves to the exit code. */
function go(args, { cwd, log }) {
  return new Promise((resolve) => {
    const out = openSync(log, 'a');
    const child = spawn(process.env.PIXELMILL_GO || 'go', args, {
      cwd,
      // CGO off, as Temporal's release builds: no C toolchain needed, a static binary. The
      // machine's Go or a clear failure, never a toolchain fetched behind our back.
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: process.env.GOTOOLCHAIN ?? 'local' },
      stdio: ['ignore', 'pipe', out],
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.on('error', (error) => {
      closeSync(out);
      resolve({ code: -1, stdout: '', error });
    });
    child.on('close', (code) => {
      closeSync(out);
      resolve({ code: code ?? -1, stdout });
    });
  });
}

function lastLines(file, count = 2) {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-count).join(' | ');
  } catch {
    return '';
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

/** Holds the version's lock while `body` runs; waits for another holder, takes over a dead one's. */
async function withLock(lockFile, body) {
  mkdirSync(dirname(lockFile), { recursive: true });
  let waitingSaid = false;
  for (;;) {
    try {
      const fd = openSync(lockFile, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(readFileSync(lockFile, 'utf8') || '0', 10);
    // An empty file is a holder between open and write: give it a moment before judging it dead.
    const stale = holder > 0 ? !alive(holder) : Date.now() - statSync(lockFile).mtimeMs > 5_000;
    if (stale) {
      rmSync(lockFile, { force: true });
      continue;
    }
    if (!waitingSaid) say(`waiting for another process (pid ${holder}) building the Temporal server`);
    waitingSaid = true;
    await sleep(500);
  }
  try {
    return await body();
  } finally {
    rmSync(lockFile, { force: true });
  }
}

function makeWritable(path) {
  // Files copied out of Go's module cache keep its read-only modes.
  chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644);
  if (statSync(path).isDirectory()) for (const entry of readdirSync(path)) makeWritable(join(path, entry));
}

async function build(tools, goLine) {
  const staging = `${tools.dir}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(join(staging, 'bin'), { recursive: true });
  writeFileSync(tools.log, `${goLine}\n`);
  const started = Date.now();
  say(
    `building the Temporal server ${tools.version} and its SQL tool from ${MODULE} into ${tools.dir} ` +
      `(once; about 3 minutes on two idle cores, log: ${tools.log})`,
  );
  // Outside any module, so that only the server's own go.mod and go.sum decide the dependencies.
  const download = await go(['mod', 'download', '-json', `${MODULE}@v${tools.version}`], {
    cwd: tmpdir(),
    log: tools.log,
  });
  if (download.code !== 0)
    return `go mod download ${MODULE}@v${tools.version} failed: ${lastLines(tools.log)}`;
  const moduleDir = JSON.parse(download.stdout).Dir;
  const built = await go(['build', '-o', join(staging, 'bin') + '/', './cmd/server', './cmd/tools/sql'], {
    cwd: moduleDir,
    log: tools.log,
  });
  if (built.code !== 0) return `go build failed (exit ${built.code}): ${lastLines(tools.log)}`;
  renameSync(join(staging, 'bin', 'server'), join(staging, 'bin', 'temporal-server'));
  renameSync(join(staging, 'bin', 'sql'), join(staging, 'bin', 'temporal-sql-tool'));
  const schemaDir = join(staging, 'schema', 'postgresql', 'v12');
  cpSync(join(moduleDir, 'schema', 'postgresql', 'v12'), schemaDir, { recursive: true });
  makeWritable(join(staging, 'schema'));
  const seconds = Math.round((Date.now() - started) / 1000);
  writeFileSync(
    join(staging, 'pixelmill-installed.json'),
    JSON.stringify({ version: tools.version, go: goLine, buildSeconds: seconds }, null, 2),
  );
  rmSync(tools.dir, { recursive: true, force: true });
  renameSync(staging, tools.dir);
  say(`built the Temporal server ${tools.version} in ${seconds} s`);
  return undefined;
}

/** The newest PostgreSQL server binaries of Debian's packages, or undefined. */
export function postgresBinDir() {
  const base = '/usr/lib/postgresql';
  const versions = existsSync(base) ? readdirSync(base).filter((v) => /^\d+$/.test(v)) : [];
  return versions
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(base, version, 'bin'))
    .find((dir) => ['initdb', 'pg_ctl', 'postgres'].every((name) => existsSync(join(dir, name))));
}

function aptGet(args) {
  const result = spawnSync('apt-get', args, {
    encoding: 'utf8',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  return result.status === 0 ? undefined : `${result.stderr ?? result.error ?? ''}`.trim().split('\n').pop();
}

/** Debian's PostgreSQL, installed when missing (as root); resolves to its bin folder or a problem. */
async function ensurePostgres() {
  const found = postgresBinDir();
  if (found) return { pgBin: found };
  const manual = 'install the PostgreSQL server (Debian: apt-get install -y postgresql)';
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get'))
    return { problem: `no PostgreSQL server binaries under /usr/lib/postgresql/*/bin: ${manual}` };
  return withLock(join(toolsDir, 'temporal-cluster', 'postgresql.lock'), async () => {
    if (postgresBinDir()) return { pgBin: postgresBinDir() };
    say("installing PostgreSQL from Debian's packages (apt-get install -y postgresql; once per machine)");
    const install = ['install', '-y', '--no-install-recommends', 'postgresql'];
    // A machine whose package lists are stale or missing needs them read first.
    const problem = aptGet(install) && (aptGet(['update']) ?? aptGet(install));
    const pgBin = postgresBinDir();
    return pgBin ? { pgBin } : { problem: `apt-get could not install PostgreSQL (${problem}): ${manual}` };
  });
}

/**
 * Installs the pinned version unless it is there, and PostgreSQL. Resolves to { ok: true, tools }
 * or { ok: false, noGo, problem } (one line); never throws for a failed build.
 */
export async function installTemporalCluster() {
  const postgres = await ensurePostgres();
  if (postgres.problem) return { ok: false, noGo: false, problem: postgres.problem };
  const tools = { ...clusterToolsOf(), pgBin: postgres.pgBin };
  if (isInstalled(tools)) return { ok: true, tools };
  const goLine = goVersion();
  if (!goLine) {
    return {
      ok: false,
      noGo: true,
      problem:
        'no Go toolchain (`go` is not on PATH; PIXELMILL_GO names another): cannot build the Temporal server',
    };
  }
  return withLock(`${tools.dir}.lock`, async () => {
    if (isInstalled(tools)) return { ok: true, tools };
    try {
      const problem = await build(tools, goLine);
      return problem ? { ok: false, noGo: false, problem } : { ok: true, tools };
    } catch (error) {
      return { ok: false, noGo: false, problem: error instanceof Error ? error.message : String(error) };
    } finally {
      rmSync(`${tools.dir}.partial-${process.pid}`, { recursive: true, force: true });
    }
  });
}

if (invokedDirectly(import.meta.url)) {
  const result = await installTemporalCluster();
  if (result.ok) {
    if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(result.tools)}\n`);
  } else {
    say(`could not install the Temporal cluster tools: ${result.problem}`);
    process.exitCode = result.noGo ? NO_GO_EXIT_CODE : 1;
  }
}
