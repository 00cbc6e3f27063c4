// A catalog of 100,000 items: how long `pixelmill validate` takes on it, and how long `pixelmill
// run` takes from being typed to "started run" (target: 10 s). The dev server is started first,
// as it is on any machine that has run pixelmill before; its own start-up is reported apart.
// The run is interrupted once it has started: what it costs to finish is the comparison's job.
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { writeItemsFile, writeManifest } from './catalog-files.js';
import { BENCH_API_KEY, type EmulatorProcess } from './emulator-process.js';
import { round } from './figures.js';
import { spawnCli, startDevServerIn, stopChild, stopRegisteredDevServer, timeCli } from './processes.js';

export interface BigManifestFigures {
  items: number;
  items_file_mb: number;
  /** `pixelmill validate` process, spawn to exit. */
  validate_s: number;
  validate_items_per_s: number;
  /** The validate process's peak resident memory (its kernel high-water mark). */
  validate_peak_rss_mb: number;
  /** `pixelmill run` spawned until it printed "started run" (validation, workers, workflow start). */
  run_start_s: number;
  dev_server_start_s: number;
}

async function timeValidate(
  dir: string,
  manifest: string,
  items: number,
): Promise<{ seconds: number; peakRssMb: number }> {
  const { code, output, seconds, peakRssMb } = await timeCli(['validate', manifest], { cwd: dir });
  if (code !== 0 || !output.includes(`${items} items`))
    throw new Error(
      `pixelmill validate failed (code ${code}): ${output.trim().split('\n').slice(0, 3).join(' | ')}`,
    );
  return { seconds, peakRssMb };
}

export async function bigManifest(
  dir: string,
  items: number,
  emulator: EmulatorProcess,
): Promise<BigManifestFigures> {
  const itemsFile = await writeItemsFile(dir, items);
  const manifest = writeManifest(dir, {
    name: 'bench-big',
    itemsFile,
    requestsPerSecond: 50,
    maxInFlight: 500,
  });
  const validation = await timeValidate(dir, manifest, items);

  const stateDir = join(dir, '.pixelmill');
  try {
    const serverStarted = performance.now();
    const { env: serverEnv } = await startDevServerIn(stateDir);
    const devServerS = (performance.now() - serverStarted) / 1000;

    const started = performance.now();
    const cli = spawnCli(['run', manifest, '--no-progress'], {
      cwd: dir,
      env: {
        ...process.env,
        ...serverEnv,
        PIXELMILL_API_BASE_URL: emulator.url,
        PIXELMILL_API_KEY: BENCH_API_KEY,
      },
    });
    cli.stdout!.resume();
    let runStartS: number | undefined;
    const seen: string[] = [];
    for await (const line of createInterface({ input: cli.stderr! })) {
      seen.push(line);
      if (/started run /.test(line)) {
        runStartS = (performance.now() - started) / 1000;
        break;
      }
    }
    cli.stderr!.resume();
    await stopChild(cli, 10_000, 'SIGINT');
    if (runStartS === undefined)
      throw new Error(`pixelmill run never printed "started run": ${seen.slice(-3).join(' | ')}`);
    return {
      items,
      items_file_mb: round(statSync(join(dir, itemsFile)).size / 1e6, 2),
      validate_s: round(validation.seconds, 2),
      validate_items_per_s: Math.round(items / validation.seconds),
      validate_peak_rss_mb: validation.peakRssMb,
      run_start_s: round(runStartS, 2),
      dev_server_start_s: round(devServerS, 2),
    };
  } finally {
    await stopRegisteredDevServer(stateDir);
  }
}
