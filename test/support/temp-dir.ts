// Scratch directories for tests that write files.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];

/** A new empty directory under the system temp dir; `removeTempDirs` deletes it. */
export function tempDir(prefix = 'pixelmill-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Deletes every directory `tempDir` made in this test file: for its afterAll. */
export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
