// The checks' throughput: images per second through checkStored (one decode with sharp from the
// stored file, the five checks, the JPEG thumbnail written to a local store), the call a worker
// makes for every image it stores, on photo-like 1K and 4K images in PNG and JPEG, one image at a
// time and two at once (this machine's cores).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkStored } from '../activities/image-checks.js';
import { DEFAULT_CHECK_LEVELS } from '../checks/image-checks.js';
import type { Resolution } from '../common/generation.js';
import { LocalResultStore } from '../storage/local.js';
import { round } from './figures.js';
import { photoLikeImage, type PhotoFormat } from './photo-like.js';

export interface ThroughputCase {
  resolution: Resolution;
  format: PhotoFormat;
  images: number;
}

export interface ThroughputFigures extends ThroughputCase {
  width: number;
  height: number;
  /** The test images' mean size. */
  mean_mb: number;
  lanes: number;
  images_per_s: number;
  /** CPU time of the whole process (libvips' threads included) per image. */
  cpu_ms_per_image: number;
}

const LONG_SIDE: Record<Resolution, number> = { '1K': 1024, '2K': 2048, '4K': 4096 };
/** Distinct images per case, each checked in turn: enough that no cache answers for libvips. */
const DISTINCT = 4;

export const THROUGHPUT_CASES: ThroughputCase[] = [
  { resolution: '1K', format: 'png', images: 80 },
  { resolution: '1K', format: 'jpeg', images: 80 },
  { resolution: '4K', format: 'png', images: 16 },
  { resolution: '4K', format: 'jpeg', images: 16 },
];

export async function checksThroughput(
  cases = THROUGHPUT_CASES,
  lanes = [1, 2],
): Promise<ThroughputFigures[]> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-checks-'));
  const store = new LocalResultStore(dir);
  const figures: ThroughputFigures[] = [];
  try {
    for (const spec of cases) {
      const side = LONG_SIDE[spec.resolution];
      const images = await Promise.all(
        Array.from({ length: DISTINCT }, () =>
          photoLikeImage({ width: side, height: side, format: spec.format }),
        ),
      );
      const meanMb = images.reduce((sum, image) => sum + image.length, 0) / images.length / 1e6;
      const files = images.map((image, k) => {
        const file = join(dir, `${spec.resolution}-${k}.${spec.format}`);
        writeFileSync(file, image);
        return file;
      });
      for (const laneCount of lanes) {
        let next = 0;
        const cpu = process.cpuUsage();
        const started = performance.now();
        const lane = async (): Promise<void> => {
          for (let k = next++; k < spec.images; k = next++) {
            const checked = await checkStored(
              { meta: { checks: DEFAULT_CHECK_LEVELS }, store },
              files[k % DISTINCT]!,
              {
                path: `${spec.resolution}-${spec.format}-${k}.${spec.format}`,
                ext: spec.format,
                item: { size: '1:1', resolution: spec.resolution },
                metadata: {},
              },
            );
            if (checked.thumbnail === undefined || checked.checks !== undefined)
              throw new Error(
                `image ${k} of ${spec.resolution} ${spec.format} did not pass: ${JSON.stringify(checked)}`,
              );
          }
        };
        await Promise.all(Array.from({ length: laneCount }, lane));
        const seconds = (performance.now() - started) / 1000;
        const used = process.cpuUsage(cpu);
        figures.push({
          ...spec,
          width: side,
          height: side,
          mean_mb: round(meanMb, 2),
          lanes: laneCount,
          images_per_s: round(spec.images / seconds, 1),
          cpu_ms_per_image: round((used.user + used.system) / 1000 / spec.images, 1),
        });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}
