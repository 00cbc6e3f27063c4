// The inputs a benchmark feeds pixelmill, written the way a catalog team would: an items file
// (JSONL, streamed so 100,000 rows cost no memory to speak of) and a manifest pointing at it.
import { createWriteStream, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { stringify } from 'yaml';

export function benchItemId(index: number): string {
  return `item-${String(index).padStart(6, '0')}`;
}

export function benchPrompt(index: number): string {
  return `bench product ${index}: a ceramic mug on a white background, studio light`;
}

/**
 * Writes `items.jsonl` with `count` rows into `dir`; resolves with its file name. The prompts of
 * items `edited` says are rewritten (a catalog team's edits, for the incremental benchmark).
 */
export async function writeItemsFile(
  dir: string,
  count: number,
  edited: (index: number) => boolean = () => false,
): Promise<string> {
  const name = 'items.jsonl';
  const out = createWriteStream(join(dir, name));
  for (let i = 1; i <= count; i++) {
    const prompt = edited(i) ? `${benchPrompt(i)}, in warm evening light` : benchPrompt(i);
    const line = `${JSON.stringify({ id: benchItemId(i), prompt })}\n`;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await finished(out);
  return name;
}

export interface ManifestSpec {
  name: string;
  itemsFile: string;
  /** `limits.requests_per_second`; left out, the manifest names no rate and pixelmill discovers it. */
  requestsPerSecond?: number;
  /** `limits.max_in_flight`; left out, pixelmill's default. */
  maxInFlight?: number;
  /** Extra top-level blocks (e.g. `webhooks`), written as given. */
  extra?: Record<string, unknown>;
  /** `output`, as the manifest says it; default `./out`. */
  output?: unknown;
}

/** Writes `manifest.yaml` into `dir` (output under `dir/out` unless given); returns its path. */
export function writeManifest(dir: string, spec: ManifestSpec): string {
  const file = join(dir, 'manifest.yaml');
  const manifest = {
    name: spec.name,
    description: 'written by the pixelmill benchmark',
    limits: {
      ...(spec.requestsPerSecond !== undefined ? { requests_per_second: spec.requestsPerSecond } : {}),
      ...(spec.maxInFlight !== undefined ? { max_in_flight: spec.maxInFlight } : {}),
    },
    output: spec.output ?? './out',
    items_file: spec.itemsFile,
    ...spec.extra,
  };
  writeFileSync(file, stringify(manifest));
  return file;
}
