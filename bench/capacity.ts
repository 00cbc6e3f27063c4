// The capacity phase: how many images per second pixelmill stores when neither the rate limit nor
// the generation time binds, beside the script baseline (bench/script.ts) on an identical
// emulator, and the CPU each spends per image outside the emulator. The script runs twice: as it
// is (download and store), and with --checks, doing pixelmill's per-image decode, thumbnail and
// checks (issue #18), the baseline a tool that checks every image can be held to.
import { join } from 'node:path';
import { compareBaseline, comparePixelmill, type SideResult } from './compare.js';
import { mapValues, medianOfEach, round } from './figures.js';

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
  /**
   * Rounds of the three sides (default 1). This machine's CPU time for the same work varies by
   * 10-15% from one run to the next, so one round's ratios can land on either side of a target;
   * with several, the figures are the rounds' medians, and pixelmill alternates first and last.
   */
  rounds?: number;
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
  /** The script with --checks, on a fresh emulator of the same configuration. */
  checked_script: SideResult | null;
  checked_script_images_per_s: number | null;
  ratio_to_checked_script: number | null;
  /** CPU per image outside the emulator: pixelmill's CLI and dev server; the scripts' processes. */
  cpu_ms_per_image: {
    pixelmill: number;
    pixelmill_cli: number;
    temporal_server: number;
    script: number | null;
    checked_script: number | null;
    /** pixelmill_cli by kind of thread (bench/processes.ts, ThreadGroup). */
    pixelmill_cli_by_thread: Record<string, number>;
    /** The scripts' processes by kind of thread, to set beside pixelmill's CLI. */
    script_by_thread: Record<string, number> | null;
    checked_script_by_thread: Record<string, number> | null;
  };
  /** The emulator's CPU per image while it served each side: the share of the machine left. */
  emulator_cpu_ms_per_image: { pixelmill: number; script: number | null; checked_script: number | null };
  cpu_profile_dir: string | null;
  /** pixelmill's CPU per image (CLI and dev server) over each script's. */
  cpu_ratio_to_script: number | null;
  cpu_ratio_to_checked_script: number | null;
  /** With several rounds, each one's figures; the ones above are their medians. */
  rounds?: CapacityFigures[];
}

/** A round's figures: what the targets and the rounds' medians are made of. */
export type CapacityFigures = Pick<
  CapacityResult,
  | 'images_per_s'
  | 'script_images_per_s'
  | 'ratio_to_script'
  | 'checked_script_images_per_s'
  | 'ratio_to_checked_script'
  | 'cpu_ratio_to_script'
  | 'cpu_ratio_to_checked_script'
  | 'cpu_ms_per_image'
  | 'emulator_cpu_ms_per_image'
>;

const byThread = (side: SideResult): Record<string, number> | null =>
  side.cpu_by_thread_s ? mapValues(side.cpu_by_thread_s, (s) => msPerImage(s, side.images)) : null;
const perSecond = (side: SideResult): number => (side.wall_s > 0 ? round(side.images / side.wall_s, 1) : 0);
const msPerImage = (cpuS: number, images: number): number =>
  images > 0 ? round((cpuS * 1000) / images, 2) : 0;

export async function capacityBenchmark(spec: CapacitySpec): Promise<CapacityResult> {
  const count = spec.rounds ?? 1;
  if (count === 1) return capacityRound(spec.dir, spec, true);
  const rounds: CapacityResult[] = [];
  for (let k = 0; k < count && (k === 0 || Date.now() < spec.deadline); k++)
    rounds.push(await capacityRound(join(spec.dir, `round-${k + 1}`), spec, k % 2 === 0));
  const figures = rounds.map(figuresOf);
  const medians = medianOfEach(figures);
  // The sides shown in full are those of the round nearest the median images/s.
  const nearest = (round: CapacityResult): number => Math.abs(round.images_per_s - medians.images_per_s);
  const middle = rounds.reduce((best, round) => (nearest(round) < nearest(best) ? round : best));
  return { ...middle, ...medians, rounds: figures };
}

function figuresOf(result: CapacityResult): CapacityFigures {
  const { images_per_s, script_images_per_s, ratio_to_script, checked_script_images_per_s } = result;
  const { ratio_to_checked_script, cpu_ratio_to_script, cpu_ratio_to_checked_script } = result;
  const { cpu_ms_per_image, emulator_cpu_ms_per_image } = result;
  return {
    images_per_s,
    script_images_per_s,
    ratio_to_script,
    checked_script_images_per_s,
    ratio_to_checked_script,
    cpu_ratio_to_script,
    cpu_ratio_to_checked_script,
    cpu_ms_per_image,
    emulator_cpu_ms_per_image,
  };
}

/** pixelmill and both scripts, each on a fresh emulator, in `dir`; pixelmill first or last. */
async function capacityRound(
  dir: string,
  spec: CapacitySpec,
  pixelmillFirst: boolean,
): Promise<CapacityResult> {
  const common = {
    items: spec.items,
    rps: UNBOUND_RPS,
    timeScale: CAPACITY_TIME_SCALE,
    deadline: spec.deadline,
  };
  const runPixelmill = (): Promise<SideResult> =>
    comparePixelmill({
      ...common,
      dir: join(dir, 'pixelmill'),
      maxInFlight: PIXELMILL_MAX_IN_FLIGHT,
      ...(spec.cpuProfileDir ? { cpuProfileDir: spec.cpuProfileDir } : {}),
    });
  const runScript = (checks: boolean): Promise<SideResult | null> =>
    Date.now() < spec.deadline
      ? compareBaseline('script', {
          ...common,
          dir: join(dir, checks ? 'checked-script' : 'script'),
          concurrency: SCRIPT_CONCURRENCY,
          toldRate: true,
          checks,
        })
      : Promise.resolve(null);
  const first = pixelmillFirst ? await runPixelmill() : undefined;
  const script = await runScript(false);
  const checked = await runScript(true);
  const side = first ?? (await runPixelmill());
  const serverCpuS = side.temporal_server_cpu_s ?? 0;
  const imagesPerS = perSecond(side);
  const ratioTo = (baseline: SideResult | null): number | null =>
    baseline && perSecond(baseline) > 0 ? round(imagesPerS / perSecond(baseline), 3) : null;
  /** A process's CPU per image: the client's (cpu_s) or the emulator's while it served the side. */
  const cpuMs = (of: SideResult | null, process: 'cpu_s' | 'emulator_cpu_s'): number | null =>
    of && msPerImage(of[process], of.images);
  const pixelmillCpu = msPerImage(side.cpu_s + serverCpuS, side.images);
  const scriptCpu = cpuMs(script, 'cpu_s');
  const checkedCpu = cpuMs(checked, 'cpu_s');
  const cpuRatio = (baselineCpu: number | null): number | null =>
    baselineCpu ? round(pixelmillCpu / baselineCpu, 2) : null;
  return {
    items: spec.items,
    rps: UNBOUND_RPS,
    time_scale: CAPACITY_TIME_SCALE,
    images_per_s: imagesPerS,
    side,
    script,
    script_images_per_s: script ? perSecond(script) : null,
    ratio_to_script: ratioTo(script),
    checked_script: checked,
    checked_script_images_per_s: checked ? perSecond(checked) : null,
    ratio_to_checked_script: ratioTo(checked),
    cpu_ratio_to_script: cpuRatio(scriptCpu),
    cpu_ratio_to_checked_script: cpuRatio(checkedCpu),
    cpu_ms_per_image: {
      pixelmill: pixelmillCpu,
      pixelmill_cli: msPerImage(side.cpu_s, side.images),
      temporal_server: msPerImage(serverCpuS, side.images),
      script: scriptCpu,
      checked_script: checkedCpu,
      pixelmill_cli_by_thread: byThread(side) ?? {},
      script_by_thread: script && byThread(script),
      checked_script_by_thread: checked && byThread(checked),
    },
    emulator_cpu_ms_per_image: {
      pixelmill: msPerImage(side.emulator_cpu_s, side.images),
      script: cpuMs(script, 'emulator_cpu_s'),
      checked_script: cpuMs(checked, 'emulator_cpu_s'),
    },
    cpu_profile_dir: spec.cpuProfileDir ?? null,
  };
}
