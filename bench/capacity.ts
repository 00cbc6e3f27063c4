// The capacity phase: how many images per second pixelmill stores when neither the rate limit nor
// the generation time binds, beside the script baseline (bench/script.ts) on an identical
// emulator, and the CPU each spends per image outside the emulator.
import { join } from 'node:path';
import { compareBaseline, comparePixelmill, type SideResult } from './compare.js';
import { round } from './figures.js';

/** The highest `requests_per_second` a manifest accepts: "the rate limit is not the bottleneck". */
export const UNBOUND_RPS = 10_000;
/** Generation 1,000x faster than the provider's: tasks finish in milliseconds. */
export const CAPACITY_TIME_SCALE = 0.001;
/** Submits in flight and downloads at once for the script, and pixelmill's max_in_flight. */
const SCRIPT_CONCURRENCY = 64;
const PIXELMILL_MAX_IN_FLIGHT = 2_000;

export interface CapacitySpec {
  dir: string;
  items: number;
  deadline: number;
  /** Where the CLI writes V8 CPU profiles of its threads (node --cpu-prof); none if absent. */
  cpuProfileDir?: string;
}

export interface CapacityResult {
  items: number;
  /** The manifest's and the emulator's rate limit: high enough not to bind. */
  rps: number;
  time_scale: number;
  images_per_s: number;
  side: SideResult;
  /** The script baseline on a fresh emulator of the same configuration. */
  script: SideResult | null;
  script_images_per_s: number | null;
  /** pixelmill's images/s over the script's: 1 keeps up with a script. */
  ratio_to_script: number | null;
  /** CPU per image outside the emulator: pixelmill's CLI and dev server; the script's process. */
  cpu_ms_per_image: {
    pixelmill: number;
    pixelmill_cli: number;
    temporal_server: number;
    script: number | null;
  };
  cpu_profile_dir: string | null;
}

const perSecond = (side: SideResult): number => (side.wall_s > 0 ? round(side.images / side.wall_s, 1) : 0);
const msPerImage = (cpuS: number, images: number): number =>
  images > 0 ? round((cpuS * 1000) / images, 2) : 0;

export async function capacityBenchmark(spec: CapacitySpec): Promise<CapacityResult> {
  const common = {
    items: spec.items,
    rps: UNBOUND_RPS,
    timeScale: CAPACITY_TIME_SCALE,
    deadline: spec.deadline,
  };
  const side = await comparePixelmill({
    ...common,
    dir: join(spec.dir, 'pixelmill'),
    maxInFlight: PIXELMILL_MAX_IN_FLIGHT,
    ...(spec.cpuProfileDir ? { cpuProfileDir: spec.cpuProfileDir } : {}),
  });
  const script =
    Date.now() < spec.deadline
      ? await compareBaseline('script', {
          ...common,
          dir: join(spec.dir, 'script'),
          concurrency: SCRIPT_CONCURRENCY,
          toldRate: true,
        })
      : null;
  const serverCpuS = side.temporal_server_cpu_s ?? 0;
  const imagesPerS = perSecond(side);
  const scriptImagesPerS = script ? perSecond(script) : null;
  return {
    items: spec.items,
    rps: UNBOUND_RPS,
    time_scale: CAPACITY_TIME_SCALE,
    images_per_s: imagesPerS,
    side,
    script,
    script_images_per_s: scriptImagesPerS,
    ratio_to_script: scriptImagesPerS ? round(imagesPerS / scriptImagesPerS, 3) : null,
    cpu_ms_per_image: {
      pixelmill: msPerImage(side.cpu_s + serverCpuS, side.images),
      pixelmill_cli: msPerImage(side.cpu_s, side.images),
      temporal_server: msPerImage(serverCpuS, side.images),
      script: script ? msPerImage(script.cpu_s, script.images) : null,
    },
    cpu_profile_dir: spec.cpuProfileDir ?? null,
  };
}
