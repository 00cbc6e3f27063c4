// `npm run bench:checks`: what checking every stored image costs (issue #18). Parts (--parts,
// comma separated, default all):
//   throughput  checkStored's images/s on photo-like 1K and 4K PNGs and JPEGs (bench/checks-throughput.ts)
//   memory      the peak RSS of a process storing and checking --memory-images 4K PNGs as a worker's
//               transfer queue does, 16 at once and one at a time (bench/checks-memory-child.ts)
//   gallery     a --gallery-items-image gallery in headless Chromium: time to the first screen of
//               thumbnails, and the bytes it loads (bench/gallery-load.ts)
//
//   npm run build && node dist/bench/checks.js [--parts gallery] [--json out.json]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { MemoryFigures } from './checks-memory-child.js';
import { checksThroughput, type ThroughputFigures } from './checks-throughput.js';
import { round, target, type Target } from './figures.js';
import { galleryBenchmark, type GalleryFigures } from './gallery-load.js';
import { photoLikeImage } from './photo-like.js';
import { cleanUpAll, cleanUpOnSignals, exited, spawnLikeCli } from './processes.js';
import { renderTable, targetsTable } from './report.js';

const PARTS = ['throughput', 'memory', 'gallery'] as const;
type Part = (typeof PARTS)[number];

/** The transfer queue's concurrency in a worker (worker/workers.ts), and one at a time. */
const MEMORY_LANES = [16, 1];
/** Distinct 4K images the memory run's server serves in turn. */
const MEMORY_DISTINCT = 4;

interface ChecksBenchResult {
  benchmark: 'checks';
  date: string;
  machine: { cpus: number; node: string };
  throughput: ThroughputFigures[] | null;
  memory: { image_mb: number; runs: MemoryFigures[] } | null;
  gallery: GalleryFigures | null;
  targets: Target[];
}

async function memoryBenchmark(images: number): Promise<{ image_mb: number; runs: MemoryFigures[] }> {
  const bodies = await Promise.all(
    Array.from({ length: MEMORY_DISTINCT }, () =>
      photoLikeImage({ width: 4096, height: 4096, format: 'png' }),
    ),
  );
  const server = createServer((request, response) => {
    const k = Number(/\/image\/(\d+)\.png$/.exec(request.url ?? '')?.[1] ?? Number.NaN);
    const body = bodies[k % MEMORY_DISTINCT];
    if (body === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'image/png', 'content-length': body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const child = fileURLToPath(new URL('./checks-memory-child.js', import.meta.url));
  const runs: MemoryFigures[] = [];
  try {
    for (const lanes of MEMORY_LANES) {
      const dir = mkdtempSync(join(tmpdir(), 'pixelmill-checks-memory-'));
      const process = spawnLikeCli([
        child,
        '--url',
        url,
        '--images',
        String(images),
        '--lanes',
        String(lanes),
        '--dir',
        dir,
      ]);
      let out = '';
      let err = '';
      process.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      process.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
      const code = await exited(process);
      rmSync(dir, { recursive: true, force: true });
      if (code !== 0) throw new Error(`the memory run (${lanes} lanes) exited ${code}: ${err.trim()}`);
      runs.push(JSON.parse(out.trim().split('\n').pop()!) as MemoryFigures);
    }
  } finally {
    server.close();
  }
  const imageMb = bodies.reduce((sum, body) => sum + body.length, 0) / bodies.length / 1e6;
  return { image_mb: round(imageMb, 1), runs };
}

function tables(result: ChecksBenchResult): string {
  const parts: string[] = [];
  if (result.throughput)
    parts.push(
      renderTable([
        ['image', 'mean MB', 'at once', 'images/s', 'CPU ms/image'],
        ...result.throughput.map((row) => [
          `${row.resolution} ${row.format} ${row.width}x${row.height}`,
          String(row.mean_mb),
          String(row.lanes),
          String(row.images_per_s),
          String(row.cpu_ms_per_image),
        ]),
      ]),
    );
  if (result.memory)
    parts.push(
      renderTable([
        ['4K PNGs', 'image MB', 'at once', 'idle RSS MB', 'first batch peak MB', 'peak RSS MB', 's'],
        ...result.memory.runs.map((run) => [
          String(run.images),
          String(result.memory!.image_mb),
          String(run.lanes),
          String(run.idle_rss_mb),
          String(run.first_batch_peak_rss_mb),
          String(run.peak_rss_mb),
          String(run.seconds),
        ]),
      ]),
    );
  if (result.gallery) {
    const g = result.gallery;
    parts.push(
      renderTable([
        ['gallery', 'value'],
        ['items (1K PNG, mean MB)', `${g.items} (${g.image_mean_mb})`],
        ['thumbnail mean KB', g.thumbnail_mean_kb],
        ['page MB', g.page_mb],
        [
          'HTTP: first screen painted, ms (median; trials)',
          `${g.first_screen_ms}; ${g.first_screen_trials_ms.join(', ')}`,
        ],
        [
          '  thumbnails painted / in the viewport',
          `${g.first_screen_thumbnails} / ${g.first_screen_in_view}`,
        ],
        ['  whole page parsed, ms', g.parsed_ms],
        ['  KB loaded until the load event', g.loaded_kb],
        [
          '  requests: page, thumbnails, full images',
          `${g.loaded_requests.page}, ${g.loaded_requests.thumbnails}, ${g.loaded_requests.full_images}`,
        ],
        ['file://: first screen painted, ms', g.file_first_screen_ms],
        ['  whole page parsed, ms', g.file_parsed_ms],
      ]),
    );
  }
  if (result.targets.length > 0) parts.push(targetsTable(result.targets));
  return parts.join('\n\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      parts: { type: 'string', default: PARTS.join(',') },
      'memory-images': { type: 'string', default: '100' },
      'gallery-items': { type: 'string', default: '10000' },
      json: { type: 'string' },
    },
  });
  const parts = values.parts.split(',') as Part[];
  const unknown = parts.filter((part) => !PARTS.includes(part));
  if (unknown.length > 0)
    throw new Error(`unknown --parts ${unknown.join(', ')}; known: ${PARTS.join(', ')}`);
  cleanUpOnSignals();
  const result: ChecksBenchResult = {
    benchmark: 'checks',
    date: new Date().toISOString(),
    machine: { cpus: availableParallelism(), node: process.version },
    throughput: parts.includes('throughput') ? await checksThroughput() : null,
    memory: parts.includes('memory') ? await memoryBenchmark(Number(values['memory-images'])) : null,
    gallery: parts.includes('gallery') ? await galleryBenchmark(Number(values['gallery-items'])) : null,
    targets: [],
  };
  if (result.gallery)
    result.targets.push(
      target('gallery: first screen of thumbnails, ms', result.gallery.first_screen_ms, 2000),
    );
  console.log(tables(result));
  if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
  await cleanUpAll();
}

await main();
