// What a chaos run is made of, all derived from its options and seed: the faults the emulator
// injects, the catalog (manifest + items), and the schedule of disruptions (worker SIGKILLs, the
// Temporal side's restarts, a worker cut off from the frontend) as shares of the images downloaded
// so far. The same seed gives the same catalog, the same emulator randomness and the same schedule.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { DEMO_API_KEY, type EmulatorConfigOverrides } from '../emulator/index.js';
import { seededRandom } from '../emulator/core/random.js';
import type { ChaosTemporal, ServerFaultKind } from './chaos-temporal.js';

export const CHAOS_API_KEY = DEMO_API_KEY;
export const CHAOS_WEBHOOK_SECRET = 'whsec_chaos';
export const CHAOS_RUN_NAME = 'chaos';
/** The manifest's retry policy for failed generations: enough that a 10% failure rate never exhausts it. */
export const CHAOS_MAX_ATTEMPTS = 8;
/** A word the emulator refuses to build (500 build_request_failed, every time): 1 item in 100 has it. */
export const CHAOS_POISON_WORD = 'unbuildable';
/** Tasks take 2-3 s, so only a lost one is still unfinished after this; it is resubmitted. */
export const CHAOS_TASK_TIMEOUT = '20s';

export interface ChaosOptions {
  items: number;
  /** Worker SIGKILLs (each followed by a fresh worker process). */
  kills: number;
  seed: number;
  /** `pixelmill worker` processes running at once. */
  workers: number;
  /**
   * Restart the Temporal side mid-run: the dev server once (its SQLite state persists), or on a
   * cluster each fault it offers once (its history service SIGKILLed, its PostgreSQL restarted).
   */
  restartServer: boolean;
  /** The Temporal to run on, e.g. a real cluster; default a persisted dev server in the run's folder. */
  temporal?: ChaosTemporal;
  /** The disruptions to play, instead of those drawn from the seed and the options below. */
  schedule?: readonly Disruption[];
  /** How long a worker is cut off from the frontend once mid-run (bench/chaos-proxy.ts); 0 or absent: never. */
  cutOffMs?: number;
  /** The emulator's clock (tasks take 40 to 60 s times this); default 0.05. */
  timeScale?: number;
  /**
   * An API that only rate-limits: none of the faults below and no poisoned prompt, for runs whose
   * subject is the Temporal side (each API fault is the dev-server chaos run's to prove).
   */
  calmApi?: boolean;
  /**
   * Workers and webhook receiver as on machines of their own (each in a mount namespace that
   * hides the run's folder, root only), the output and the run's state in an `s3://` bucket on a
   * real S3-compatible server, audited through the S3 API.
   */
  sharedNothing?: boolean;
  /** Shares of the images downloaded at which to SIGKILL a worker; default drawn from the seed. */
  killAt?: number[];
  /** Share of the images downloaded at which the dev server restarts; default drawn from the seed. */
  restartAt?: number;
  /** Share at which the webhook receiver is SIGKILLed, to come back `webhookOutageMs` later. */
  webhookOutageAt?: number;
  webhookOutageMs: number;
  /** Past this many ms after the start, unfinished items are reported stuck and the run abandoned. */
  deadlineMs: number;
  /** Fault rates to use instead of the defaults below (the test raises the malformed share). */
  faults?: ChaosFaults;
  /** The pixelmill CLI entry to run as `node <cli> ...` (dist/client/main.js or bin/pixelmill.js). */
  cli: string;
  /** A folder to work in (a fresh temp folder when absent; kept only when given). */
  dir?: string;
  log: (line: string) => void;
}

export type DisruptionKind = 'kill' | 'cut-off' | ServerFaultKind | 'webhook-outage';

export interface Disruption {
  kind: DisruptionKind;
  /** Share of the expected images downloaded when it happens. */
  atShare: number;
  /** Which worker (index) a kill or a cut-off hits; -1 for the others. */
  worker: number;
}

/**
 * Ordered by `atShare`. Kills fall in 10%..90% of the downloads, each server restart in 30%..70%,
 * the webhook outage in 20%..80%: while the receiver is down the emulator gives up on its
 * deliveries, and those tasks are found by polling, which is where malformed query answers come
 * into play. A cut-off falls in 10%..50%, so that the run outlasts it.
 */
export function disruptionSchedule(
  options: Pick<
    ChaosOptions,
    | 'seed'
    | 'kills'
    | 'killAt'
    | 'workers'
    | 'restartServer'
    | 'restartAt'
    | 'webhookOutageMs'
    | 'webhookOutageAt'
    | 'cutOffMs'
  > & {
    /** What the Temporal side can suffer; default the dev server's restart. */
    serverFaults?: readonly ServerFaultKind[];
  },
): Disruption[] {
  const random = seededRandom(options.seed ^ 0x5eed);
  const kills = options.killAt ?? Array.from({ length: options.kills }, () => 0.1 + 0.8 * random());
  const events: Disruption[] = kills.map((atShare) => ({
    kind: 'kill',
    atShare,
    worker: Math.floor(random() * options.workers),
  }));
  if (options.restartServer)
    for (const kind of options.serverFaults ?? ['restart-server'])
      events.push({ kind, atShare: options.restartAt ?? 0.3 + 0.4 * random(), worker: -1 });
  if (options.webhookOutageMs > 0)
    events.push({
      kind: 'webhook-outage',
      atShare: options.webhookOutageAt ?? 0.2 + 0.6 * random(),
      worker: -1,
    });
  // Drawn last, so that the schedules of earlier seeds stay what they were.
  if ((options.cutOffMs ?? 0) > 0)
    events.push({
      kind: 'cut-off',
      atShare: 0.1 + 0.4 * random(),
      worker: Math.floor(random() * options.workers),
    });
  return events.sort((a, b) => a.atShare - b.atShare);
}

/**
 * Every fault at once, at rates that keep the run finishable: about 1 in 20 API calls answered
 * 5xx, 1 in 10 queries malformed, 429s from a bucket far below the run's rate, 1 in 50 downloads cut
 * off and every download throttled, 1 in 10 generations failing, 1 in 100 tasks lost (processing
 * forever), 1 in 25 tasks with wrong images (of another aspect ratio, or blank) for the checks to
 * reject, 1 in 5 webhooks sent twice, and every submit of a poisoned prompt refused.
 * Tasks take 2-3 s, so with the run's max_in_flight they finish all through the run (and a webhook
 * outage loses some); results live an hour of real time, so a stalled run is not an expiry test.
 */
export type ChaosFaults = NonNullable<EmulatorConfigOverrides['faults']>;

export function chaosEmulatorConfig(
  seed: number,
  faults: ChaosFaults = {},
  timeScale = 0.05,
): EmulatorConfigOverrides {
  return {
    host: '127.0.0.1',
    port: 0,
    seed,
    time_scale: timeScale,
    result_ttl_seconds: Math.ceil(3600 / timeScale),
    accounts: [
      {
        id: 'acct_chaos',
        credits: 100_000_000,
        webhook_secret: CHAOS_WEBHOOK_SECRET,
        keys: [{ key: CHAOS_API_KEY }],
      },
    ],
    rate_limits: { submit: { per_second: 50, burst: 10 }, query: { per_second: 50, burst: 10 } },
    generation: { failure_rate: 0.1 },
    faults: {
      server_error_rate: 0.05,
      malformed_response_rate: 0.1,
      truncate_download_rate: 0.02,
      slow_download_kbps: 2_000,
      webhook_duplicate_rate: 0.2,
      stuck_task_rate: 0.01,
      wrong_aspect_image_rate: 0.02,
      blank_image_rate: 0.02,
      poisoned_prompt_words: [CHAOS_POISON_WORD],
      ...faults,
    },
  };
}

/** The chaos emulator's accounts, clock and rate limits without any fault: an API that only rate-limits. */
export function calmEmulatorConfig(seed: number, timeScale = 0.05): EmulatorConfigOverrides {
  const { faults: _faults, generation: _generation, ...calm } = chaosEmulatorConfig(seed, {}, timeScale);
  return calm;
}

/** Items at the API at once: with 2-3 s tasks, about the emulator's 50 submits per second. */
export const CHAOS_MAX_IN_FLIGHT = 100;
/** The run's requests per second: three times the emulator's bucket, so 429s come in storms. */
export const CHAOS_REQUESTS_PER_SECOND = 160;

const SIZES = ['1:1', '16:9', '2:3', '4:5'];

export interface ChaosItem {
  id: string;
  prompt: string;
  n: number;
  size: string;
}

/**
 * Whether item `i` of a chaos catalog of `count` items has a prompt the API refuses to build:
 * one in 100, all in the first 60%. A poisoned item first tried when hardly any other submit
 * is left to compare with is refused only after ALONE_SUBMIT_TRIES (about 15 minutes, on
 * purpose: activities/api-evidence.ts), far past a test's deadline; test/api-evidence.test.ts
 * covers that case.
 */
export const isPoisoned = (i: number, count: number): boolean => i % 100 === 37 && i < 0.6 * count;

/** The catalog; with `poisoned` false (a calm API), no prompt has the poison word. */
export function chaosItems(count: number, seed: number, poisoned = true): ChaosItem[] {
  return Array.from({ length: count }, (_, i) => ({
    id: `sku-${String(i).padStart(5, '0')}`,
    prompt: `chaos ${seed} product ${i}: a linen armchair, ${poisoned && isPoisoned(i, count) ? CHAOS_POISON_WORD : 'studio light'}`,
    n: (i % 2) + 1,
    size: SIZES[i % SIZES.length]!,
  }));
}

/** Where a chaos run stores: `./out` beside the manifest, or an S3 bucket's prefix. */
export type ChaosOutput = string | { dir: string; endpoint: string; force_path_style: true };

/** Writes `<dir>/chaos.yaml` (items inline, webhooks to `webhookUrl`). */
export function writeChaosManifest(
  dir: string,
  items: ChaosItem[],
  apiUrl: string,
  webhookUrl: string,
  output: ChaosOutput = './out',
): string {
  const manifest = {
    name: CHAOS_RUN_NAME,
    description: 'written by the pixelmill chaos run (bench/chaos.ts)',
    api: { base_url: apiUrl },
    limits: {
      requests_per_second: CHAOS_REQUESTS_PER_SECOND,
      max_in_flight: CHAOS_MAX_IN_FLIGHT,
      task_timeout: CHAOS_TASK_TIMEOUT,
    },
    output,
    retry: {
      max_attempts: CHAOS_MAX_ATTEMPTS,
      on: ['generation_failed', 'task_timeout', 'ImageCheckFailed'],
    },
    webhooks: { enabled: true, public_url: webhookUrl },
    items,
  };
  const file = join(dir, 'chaos.yaml');
  writeFileSync(file, stringify(manifest));
  return file;
}
