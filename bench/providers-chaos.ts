// `node dist/bench/providers-chaos.js`: issue 39's third target on each provider, through the
// chaos suite's kills and restarts. For fal, Replicate and BFL in turn, a catalog of --items on the
// provider's emulator at its documented limit (bench/providers-setups.ts), generation and retention
// compressed (--time-scale), the chaos faults on (--no-faults: kills and restarts alone), run by
// `pixelmill worker` processes that are SIGKILLed (--kills) while the dev server is restarted once
// (bench/providers-chaos-run.ts). Per provider it prints the checks and figures:
//   lost to retention   results of the run's attempts the provider deleted before anyone fetched
//                       them (0); the emulator's own count, duplicates' results included, beside it
//   items lost, images bad, items stuck, report inconsistencies (0)
//   duplicate submits   tasks beyond one per attempt, at most the kills
//   ready to fetched    for each result, ready to its first fetch over the provider's retention,
//                       max and p99 (BFL: the sample URL's 10 minutes; fal: the result's hour;
//                       Replicate: the hour until its files are removed)
//   wall, calls / image
// Exit code 1 if a check fails.
//
//   npm run build && node dist/bench/providers-chaos.js [--provider fal,replicate,bfl] [--items 2000]
//       [--kills 3] [--seed 1] [--workers 2] [--no-restart] [--no-faults] [--time-scale 0.2]
//       [--deadline-minutes 30] [--dir DIR] [--json out.json]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CLI, cleanUpAll, cleanUpOnSignals } from './processes.js';
import { checksTable, disruptionsTable, type ChaosCheck } from './chaos-report.js';
import { runProviderChaos, type ProviderChaosResult } from './providers-chaos-run.js';
import { PROVIDERS, type Provider } from './providers-setups.js';

export function providerChaosChecks(result: ProviderChaosResult): ChaosCheck[] {
  const { audit } = result;
  const zero = (name: string, value: number): ChaosCheck => ({
    name,
    value,
    limit: '0',
    ok: value === 0,
  });
  return [
    { name: 'run finished', value: result.finished, limit: 'yes', ok: result.finished },
    // The emulator also counts a duplicate's result, which nobody knew to fetch, once its retention
    // is over: those are the duplicate submits below, not results the run lost.
    zero('results of attempts lost to retention', audit.deleted_unfetched.attempt),
    zero('items expired', audit.items_expired),
    zero('items lost', audit.items_lost),
    zero('images bad', audit.images_bad),
    {
      name: 'duplicate submits',
      value: audit.extra_submissions,
      limit: `<= ${result.kills_done} (kills)`,
      ok: audit.extra_submissions <= result.kills_done,
    },
    zero('items stuck', audit.items_stuck),
    zero('report inconsistent with the emulator', audit.report_inconsistencies),
  ];
}

export function formatProviderChaos(result: ProviderChaosResult, checks: ChaosCheck[]): string {
  const { audit, options } = result;
  const share = result.ready_to_fetch_share;
  return [
    `${result.provider}: ${options.items} items, seed ${options.seed}, ${options.workers} worker processes, ` +
      `time_scale ${options.timeScale}, faults ${options.faults ? 'on' : 'off'}; ${result.machine.cpus} CPUs, ${result.machine.node}`,
    `wall ${result.wall_s} s (bound ${result.bound_s} s); ${audit.completed} completed, ` +
      `${audit.failed_by_provider} failed by the provider (every one of their tasks failed); ` +
      `${audit.tasks_at_provider} tasks at the provider; ${result.calls.per_image} API calls an image, ` +
      `${result.calls.refused_429} answered 429`,
    `ready to fetched, over the retention: max ${share.max}, p99 ${share.p99} (${share.results} results)`,
    checksTable(checks),
    disruptionsTable(result.disruptions),
    `faults injected: ${JSON.stringify(result.faults)}`,
    `images: ${audit.images_matched_served} matched what the provider serves, ` +
      `${audit.images_gone_at_provider} gone at the provider by the audit (checked on disk and decoded)`,
    `results deleted before anyone fetched them, as the emulator counts them: ${result.lost_to_retention}; ` +
      `by the audit ${audit.deleted_unfetched.attempt} of attempts, ${audit.deleted_unfetched.duplicate} of duplicates; ` +
      `${audit.unfetched_not_yet_deleted} unfetched, not deleted yet`,
    `submit journal: ${audit.journal.submits_taken_over} retried submits took their cut-off attempt's task; ` +
      `a task reached it ${audit.journal.journal_lag_ms.p50} ms after the provider made it ` +
      `(p99 ${audit.journal.journal_lag_ms.p99}, max ${audit.journal.journal_lag_ms.max}); ` +
      `${audit.journal.tasks_not_journaled} tasks never did`,
    `slowest fetches (s after the start: ready -> fetched, lag): ` +
      audit.slowest_fetches.map((f) => `${f.ready_s} -> ${f.fetched_s} (${f.lag_s})`).join(', '),
    ...(result.unplanned_restarts.length
      ? ['processes that died by themselves:', ...result.unplanned_restarts]
      : []),
    ...(audit.resubmitted.length
      ? [
          'items submitted more than their attempts (s after the start each task was made):',
          ...audit.resubmitted.map(
            (entry) => `  ${entry.id} (${entry.attempts} attempts): ${entry.submitted_s.join(', ')}`,
          ),
        ]
      : []),
    ...(audit.problems.length ? ['problems:', ...audit.problems.map((line) => `  ${line}`)] : []),
  ].join('\n');
}

function integer(name: string, value: string, min: number): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < min)
    throw new Error(`--${name} must be an integer >= ${min}, got ${value}`);
  return number;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      provider: { type: 'string', default: PROVIDERS.join(',') },
      items: { type: 'string', default: '2000' },
      kills: { type: 'string', default: '3' },
      seed: { type: 'string', default: '1' },
      workers: { type: 'string', default: '2' },
      'no-restart': { type: 'boolean', default: false },
      'no-faults': { type: 'boolean', default: false },
      'time-scale': { type: 'string', default: '0.2' },
      'deadline-minutes': { type: 'string', default: '30' },
      dir: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const providers = values.provider.split(',') as Provider[];
  for (const provider of providers)
    if (!PROVIDERS.includes(provider))
      throw new Error(`--provider: ${provider} is not one of ${PROVIDERS.join(', ')}`);
  const timeScale = Number(values['time-scale']);
  if (!(timeScale > 0))
    throw new Error(`--time-scale must be a positive number, got ${values['time-scale']}`);
  cleanUpOnSignals();
  const results: (ProviderChaosResult & { checks: ChaosCheck[] })[] = [];
  try {
    for (const provider of providers) {
      const result = await runProviderChaos({
        provider,
        items: integer('items', values.items, 1),
        kills: integer('kills', values.kills, 0),
        seed: integer('seed', values.seed, 0),
        workers: integer('workers', values.workers, 1),
        restartServer: !values['no-restart'],
        faults: !values['no-faults'],
        timeScale,
        deadlineMs: integer('deadline-minutes', values['deadline-minutes'], 1) * 60_000,
        cli: CLI,
        ...(values.dir ? { dir: values.dir } : {}),
        log: (line) => void process.stderr.write(`${line}\n`),
      });
      const checks = providerChaosChecks(result);
      results.push({ ...result, checks });
      process.stdout.write(`${formatProviderChaos(result, checks)}\n\n`);
      // Written after each provider: a later one's failure keeps the earlier figures.
      if (values.json) writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
    }
  } finally {
    await cleanUpAll();
  }
  return results.every((result) => result.checks.every((check) => check.ok)) ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`providers-chaos: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
