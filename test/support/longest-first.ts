// The order vitest starts test files in: the longest first, so that with two files at a time the
// suite does not end on a long file started last while the other worker sits idle. Vitest orders
// by the durations of the previous run, but a fresh clone (CI) has none and falls back to file
// size, which started big short-lived files first and 50-second small ones (shipped-manifests,
// rate-limit-fleet) among the last.
//
// file-seconds.json holds each file's seconds in CI on a clean clone. Refresh it after a full
// run: vitest keeps the durations in node_modules/.vite/vitest/*/results.json.
import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const CI_SECONDS = JSON.parse(
  readFileSync(new URL('./file-seconds.json', import.meta.url), 'utf8'),
) as Record<string, number>;

/**
 * Within each group and project: files never timed first (a new file may be long; a short one
 * costs nothing first), then the others longest first, by this machine's last run of the file
 * when vitest has one, else by file-seconds.json.
 */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const { cache, config } = this.ctx;
    const expectedMs = (file: TestSpecification): number => {
      const path = relativePath(config.root, file.moduleId);
      const ciSeconds = CI_SECONDS[path];
      return (
        cache.getFileTestResults(`${file.project.name}:${path}`)?.duration ??
        (ciSeconds === undefined ? Number.POSITIVE_INFINITY : ciSeconds * 1000)
      );
    };
    const order = new Map(files.map((file) => [file, expectedMs(file)]));
    return [...files].sort(
      (a, b) =>
        a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder ||
        a.project.name.localeCompare(b.project.name) ||
        // Infinity - Infinity is NaN: two new files keep their order.
        order.get(b)! - order.get(a)! ||
        0,
    );
  }
}

function relativePath(root: string, file: string): string {
  return file.startsWith(`${root}/`) ? file.slice(root.length + 1) : file;
}
