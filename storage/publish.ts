// Publishes a run's report files (report.jsonl, summary.json, the gallery) from the local
// directory where writeReport builds them to the run's S3 store (a local output's report files
// are written in place and never published): each file becomes an object beside the images,
// skipped when an identical object is already there.
import { join } from 'node:path';
import { pathExists } from './files.js';
import type { ResultStore, StoredImage } from './result-store.js';

export interface PublishedFile extends StoredImage {
  name: string;
  /** Where it is now, e.g. `s3://bucket/prefix/report.jsonl`. */
  location: string;
}

/** Stores each of `names` found in `localDir` at the same relative path; absent files are skipped. */
export async function publishReportFiles(
  store: ResultStore,
  localDir: string,
  names: readonly string[],
): Promise<PublishedFile[]> {
  const published: PublishedFile[] = [];
  for (const name of names) {
    const file = join(localDir, name);
    if (!(await pathExists(file))) continue;
    const stored = await store.putFile(name, file, { 'pixelmill-file': 'report' });
    published.push({ name, location: `${store.location}/${name}`, ...stored });
  }
  return published;
}
