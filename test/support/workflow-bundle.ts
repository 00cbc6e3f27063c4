// pixelmill's workflow code bundled once for a whole test run, from the sources, instead of by
// every worker a test starts (webpack: about 4 s of CPU and 100 MB each, some twenty times a
// run). The global setup builds it, or finds it built by an earlier run from the same sources,
// and names it in PIXELMILL_WORKFLOW_BUNDLE, which every worker of the run loads
// (worker/workers.ts): in-process workers, and the CLI processes the tests start.
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, relative } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { projectRoot } from '../../temporal/binaries.js';
import { WORKFLOW_BUNDLE_ENV } from '../../worker/workers.js';

/** Not sources of the bundle: the tests, what is built or installed, tools and state. */
const NOT_SOURCES = new Set(['test', 'dist', 'node_modules']);

/** Every TypeScript file outside NOT_SOURCES and dot-folders, relative to `root`, sorted. */
function sourceFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory())
        return entry.name.startsWith('.') || (dir === root && NOT_SOURCES.has(entry.name))
          ? []
          : sourceFiles(root, path);
      return entry.name.endsWith('.ts') ? [relative(root, path)] : [];
    })
    .sort();
}

/**
 * What the bundle is made of: the sources it may import (all of them, a superset: the workflows
 * reach into common/, governor/, storage/ and more) and the locked SDK version.
 */
function sourcesHash(root: string): string {
  const hash = createHash('sha256');
  for (const file of [...sourceFiles(root), 'package-lock.json'])
    hash
      .update(file)
      .update('\0')
      .update(readFileSync(join(root, file)))
      .update('\0');
  return hash.digest('hex').slice(0, 16);
}

/** Older bundles are removed after this long unused (another test run may be loading one now). */
const KEEP_MS = 24 * 3600_000;

/**
 * The run's bundle, named in WORKFLOW_BUNDLE_ENV: reused when the sources have not changed since
 * it was built, else built again.
 */
export async function prepareWorkflowBundle(): Promise<string> {
  const root = projectRoot();
  const dir = join(root, 'node_modules', '.cache', 'pixelmill');
  const name = `workflow-bundle-${sourcesHash(root)}.js`;
  const path = join(dir, name);
  mkdirSync(dir, { recursive: true });
  if (!readdirSync(dir).includes(name)) {
    const { code } = await bundleWorkflowCode({
      workflowsPath: join(root, 'workflows', 'index.ts'),
      logger: { log() {}, trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error },
    });
    for (const old of readdirSync(dir).filter((file) => file.startsWith('workflow-bundle-'))) {
      if (Date.now() - statSync(join(dir, old)).mtimeMs > KEEP_MS) rmSync(join(dir, old), { force: true });
    }
    // Written whole or not at all: a run started meanwhile never loads half a bundle.
    writeFileSync(`${path}.${process.pid}.tmp`, code);
    renameSync(`${path}.${process.pid}.tmp`, path);
  } else {
    // In use again: not one of the older bundles a run removes.
    utimesSync(path, new Date(), new Date());
  }
  process.env[WORKFLOW_BUNDLE_ENV] = path;
  return path;
}
