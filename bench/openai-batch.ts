// `npm run bench:openai`: issue 41's targets for OpenAI's Batch API, on the OpenAI emulator over
// HTTP with real workers (`pixelmill run` in embedded mode, its workers in the CLI process, on a
// Temporal dev server of its own), the emulator's clock compressed (--time-scale) and its images
// drawn once per size (`images.content: one_per_size`) so that the machine's CPU goes to pixelmill.
// Phases (--phases, comma separated, default both):
//   batch    --items (5,000) in batch mode, each image padded (--padding-bytes) so that every
//            500-line output file is 2 GB or more: API calls per image (the emulator's counts,
//            target <= 0.05), the CLI's peak RSS (VmHWM sampled every 50 ms, target <= 400 MB)
//            while it streams those files, and the audit: every item's custom_id sent once, every
//            item completed from a line that ran, every stored file decoding whole (sharp).
//   expired  --expired-items (1,000) whose first batches expire once 60% of their requests ran
//            (`expire_at_fraction: 0.6`; the next batches run to their end): every finished
//            image of the expired batches stored from them, the rest completed by the retry
//            batch, no item sent again after a line of it succeeded, no custom_id twice.
//
//   npm run build && node dist/bench/openai-batch.js [--phases batch,expired] [--items 5000]
//       [--padding-bytes 3300000] [--expired-items 1000] [--time-scale 0.002] [--json out.json]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { request } from 'undici';
import { mapLimit } from '../common/map-limit.js';
import {
  DEMO_OPENAI_KEY,
  startOpenAIEmulator,
  type RunningOpenAIEmulator,
} from '../emulator/openai/index.js';
import { auditBatchRun, type BatchAudit, type ReportLine, type TruthLine } from './openai-batch-audit.js';
import { round, target, targetAtLeast, type Target } from './figures.js';
import {
  cleanUpAll,
  cleanUpOnSignals,
  startDevServerIn,
  stopRegisteredDevServer,
  timeCli,
} from './processes.js';

const PHASES = ['batch', 'expired'] as const;
type Phase = (typeof PHASES)[number];
/** Items per batch: a batch shard's (docs/providers.md#openai). */
const BATCH_ITEMS = 500;
const MB = 1024 * 1024;

interface PhaseFigures {
  phase: Phase;
  items: number;
  completed: number;
  images: number;
  /** `pixelmill run` from spawn to exit (timeCli): the dev server is started before it. */
  wall_s: number;
  cli_cpu_s: number;
  peak_rss_mb: number;
  batches: number;
  api_calls: number;
  calls_per_image: number;
  calls_by_route: Record<string, number>;
  /** The output files' sizes (the Files API's `bytes`), largest and smallest. */
  output_file_mb: { max: number; min: number };
  /** Batch file bytes the emulator sent (ranges after a cut included). */
  bytes_served_mb: number;
  stored_files_not_decoding: number;
  audit: BatchAudit;
  load_average: { before: number[]; after: number[] };
  targets: Target[];
}

async function benchPhase(
  phase: Phase,
  options: { items: number; paddingBytes: number; timeScale: number; dir: string },
): Promise<PhaseFigures> {
  const dir = mkdtempSync(join(options.dir, `${phase}-`));
  const api = await startOpenAIEmulator({
    config: {
      port: 0,
      time_scale: options.timeScale,
      images: { content: 'one_per_size', image_padding_bytes: options.paddingBytes },
      batches: { expire_at_fraction: phase === 'expired' ? 0.6 : null },
    },
    log: (line) => process.stderr.write(`emulator: ${line}\n`),
  });
  // The first round's batches expire; once they all have, the retry's run to their end.
  const firstRound = Math.ceil(options.items / BATCH_ITEMS);
  const watch =
    phase === 'expired'
      ? setInterval(() => {
          if (api.stats().batches.expired < firstRound) return;
          api.setKnobs({ batches: { expire_at_fraction: null } });
          clearInterval(watch);
        }, 100)
      : undefined;
  const stateDir = join(dir, '.pixelmill');
  const { env: serverEnv } = await startDevServerIn(stateDir);
  const before = loadavg().map((n) => round(n, 2));
  try {
    const manifest = join(dir, 'catalog.yaml');
    writeFileSync(
      manifest,
      [
        `name: bench-openai-${phase}`,
        // The default polling (the first status call after 2 s, waits growing to 10 minutes), as
        // against OpenAI: the emulated batches end within seconds.
        'api: { provider: openai, api_key_env: OPENAI_API_KEY, mode: batch }',
        'defaults: { size: "1:1", params: { quality: low, output_format: png } }',
        // Every check on: what a user runs.
        'output: ./out',
        'items:',
        ...Array.from(
          { length: options.items },
          (_, i) => `  - { id: item-${i}, prompt: "bench product ${i}" }`,
        ),
      ].join('\n'),
    );
    const run = await timeCli(['run', manifest, '--no-progress'], {
      cwd: dir,
      env: {
        ...process.env,
        ...serverEnv,
        PIXELMILL_API_BASE_URL: api.url,
        OPENAI_API_KEY: DEMO_OPENAI_KEY,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    if (run.code !== 0)
      process.stderr.write(`pixelmill run exited ${run.code}:\n${run.stderr.slice(-4000)}\n`);
    // The emulator's counts before the benchmark's own calls below.
    const stats = api.stats();
    const out = join(dir, 'out');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
      counts: { completed: number };
      images: number;
    };
    const report = readFileSync(join(out, 'report.jsonl'), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as ReportLine);
    const truth = await ndjson<TruthLine>(`${api.url}/_emulator/requests`);
    const audit = auditBatchRun(truth, report, options.items);
    const notDecoding = await undecodable(out, report);
    const sizes = await outputFileSizes(api);
    const byRoute: Record<string, number> = {};
    for (const [route, statuses] of Object.entries(stats.requests))
      if (route.includes('/v1/')) byRoute[route] = Object.values(statuses).reduce((sum, n) => sum + n, 0);
    const calls = Object.values(byRoute).reduce((sum, n) => sum + n, 0);
    const callsPerImage = summary.images > 0 ? round(calls / summary.images, 4) : 0;
    const figures: PhaseFigures = {
      phase,
      items: options.items,
      completed: summary.counts.completed,
      images: summary.images,
      wall_s: round(run.seconds, 1),
      cli_cpu_s: round(run.cpuSeconds, 1),
      peak_rss_mb: round(run.peakRssMb, 1),
      batches: stats.batches_total,
      api_calls: calls,
      calls_per_image: callsPerImage,
      calls_by_route: byRoute,
      output_file_mb: sizes,
      bytes_served_mb: round(stats.files.bytes_served / MB, 1),
      stored_files_not_decoding: notDecoding,
      audit,
      load_average: { before, after: loadavg().map((n) => round(n, 2)) },
      targets: [],
    };
    figures.targets = targetsOf(figures);
    return figures;
  } finally {
    if (watch) clearInterval(watch);
    await api.close();
    await stopRegisteredDevServer(stateDir);
    rmSync(dir, { recursive: true, force: true });
  }
}

function targetsOf(f: PhaseFigures): Target[] {
  const common = [
    target('custom_ids sent twice', f.audit.custom_ids_twice, 0),
    target('items sent again after a line of theirs succeeded', f.audit.sent_again_after_success, 0),
    target('items not completed', f.items - f.completed, 0),
    target('completed without a line that ran', f.audit.completed_without_truth, 0),
    target('stored files that do not decode', f.stored_files_not_decoding, 0),
  ];
  if (f.phase === 'batch')
    return [
      target('API calls per image', f.calls_per_image, 0.05),
      target('worker peak RSS (MB)', f.peak_rss_mb, 400),
      targetAtLeast('largest output file (MB)', f.output_file_mb.max, 2048),
      ...common,
    ];
  const share = (n: number, of: number): number => (of === 0 ? 0 : round(n / of, 4));
  return [
    targetAtLeast(
      'finished images of the expired batches stored (share)',
      share(f.audit.stored_from_expired, f.audit.finished_in_expired),
      1,
    ),
    targetAtLeast(
      'unfinished items completed by the retry (share)',
      share(f.audit.completed_by_retry, f.audit.unfinished_in_expired),
      1,
    ),
    ...common,
  ];
}

async function ndjson<T>(url: string): Promise<T[]> {
  const response = await request(url);
  return (await response.body.text())
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as T);
}

/** Stored files that sharp cannot decode whole (every pixel), two at a time. */
async function undecodable(out: string, report: readonly ReportLine[]): Promise<number> {
  const paths = report.filter((line) => line.status === 'completed').flatMap((line) => line.images);
  const failed = await mapLimit(paths, 2, async ({ path }) =>
    sharp(join(out, path))
      .raw()
      .toBuffer()
      .then(
        () => 0,
        () => 1,
      ),
  );
  return failed.reduce<number>((sum, n) => sum + n, 0);
}

/** The batches' output files' sizes, from the Files API (after the run: not counted as its calls). */
async function outputFileSizes(api: RunningOpenAIEmulator): Promise<{ max: number; min: number }> {
  const headers = { authorization: `Bearer ${DEMO_OPENAI_KEY}` };
  const get = async <T>(path: string): Promise<T> =>
    (await (await request(`${api.url}${path}`, { headers })).body.json()) as T;
  const batches = await get<{ data: { output_file_id: string | null }[] }>('/v1/batches?limit=100');
  const sizes: number[] = [];
  for (const batch of batches.data) {
    if (!batch.output_file_id) continue;
    const file = await get<{ bytes: number | null }>(`/v1/files/${batch.output_file_id}`);
    if (typeof file.bytes === 'number') sizes.push(file.bytes / MB);
  }
  return sizes.length === 0
    ? { max: 0, min: 0 }
    : { max: round(Math.max(...sizes), 1), min: round(Math.min(...sizes), 1) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      phases: { type: 'string', default: PHASES.join(',') },
      items: { type: 'string', default: '5000' },
      'padding-bytes': { type: 'string', default: '3300000' },
      'expired-items': { type: 'string', default: '1000' },
      'time-scale': { type: 'string', default: '0.002' },
      json: { type: 'string' },
    },
  });
  cleanUpOnSignals();
  const dir = mkdtempSync(join(tmpdir(), 'pixelmill-bench-openai-'));
  const results: PhaseFigures[] = [];
  try {
    for (const phase of values.phases.split(',') as Phase[]) {
      if (!PHASES.includes(phase)) throw new Error(`unknown phase ${phase}: one of ${PHASES.join(', ')}`);
      const figures = await benchPhase(phase, {
        items: Number(phase === 'batch' ? values.items : values['expired-items']),
        // The expired phase measures what is kept and retried, not memory: small images.
        paddingBytes: phase === 'batch' ? Number(values['padding-bytes']) : 0,
        timeScale: Number(values['time-scale']),
        dir,
      });
      results.push(figures);
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    }
  } finally {
    await cleanUpAll();
    rmSync(dir, { recursive: true, force: true });
  }
  if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
}

await main();
