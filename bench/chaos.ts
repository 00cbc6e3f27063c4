// `npm run chaos`: a catalog run while everything goes wrong (issue #6 section 2). The emulator
// injects 5xx, 429 storms, malformed query answers, slow and cut-off downloads, failed generations
// and duplicate webhooks; the harness SIGKILLs `pixelmill worker` processes at random moments
// (drawn from the seed) and restarts the persisted Temporal dev server once. Then the run is
// audited against the emulator's ground truth (bench/chaos-audit.ts). Exit code 1 if a check fails.
// With --shared-nothing (root only), workers and receiver run as on machines of their own and the
// run stores into an s3:// bucket on rclone, audited through the S3 API. With --cluster, Temporal
// is a real cluster on PostgreSQL (bench/chaos-on-cluster.ts) whose history service is SIGKILLed
// and whose PostgreSQL is restarted instead; --cut-off-ms cuts a worker off from the frontend
// that long; --calm-api turns the API's faults off (the subject is then the Temporal side).
//
//   npm run chaos -- [--items 2000] [--kills 3] [--seed 1] [--workers 2] [--no-restart]
//                    [--shared-nothing] [--webhook-outage-ms 15000] [--deadline-minutes 30]
//                    [--cluster] [--cut-off-ms 30000] [--calm-api] [--time-scale 0.05]
//                    [--dir DIR] [--json out.json]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ChaosOptions } from './chaos-config.js';
import { startChaosCluster } from './chaos-on-cluster.js';
import { chaosChecks, formatChaosReport } from './chaos-report.js';
import { runChaos } from './chaos-run.js';
import { CLI, cleanUpAll, cleanUpOnSignals } from './processes.js';

function positiveInteger(name: string, value: string, min = 1): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number < min)
    throw new Error(`--${name} must be an integer >= ${min}, got ${value}`);
  return number;
}

function parseOptions(argv: string[]): { options: ChaosOptions; json?: string; cluster: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      items: { type: 'string', default: '2000' },
      kills: { type: 'string', default: '3' },
      seed: { type: 'string', default: '1' },
      workers: { type: 'string', default: '2' },
      'no-restart': { type: 'boolean', default: false },
      'shared-nothing': { type: 'boolean', default: false },
      'webhook-outage-ms': { type: 'string', default: '15000' },
      'deadline-minutes': { type: 'string', default: '30' },
      cluster: { type: 'boolean', default: false },
      'cut-off-ms': { type: 'string', default: '0' },
      'calm-api': { type: 'boolean', default: false },
      'time-scale': { type: 'string', default: '0.05' },
      dir: { type: 'string' },
      json: { type: 'string' },
    },
  });
  const options: ChaosOptions = {
    items: positiveInteger('items', values.items),
    kills: positiveInteger('kills', values.kills, 0),
    seed: positiveInteger('seed', values.seed, 0),
    workers: positiveInteger('workers', values.workers),
    restartServer: !values['no-restart'],
    sharedNothing: values['shared-nothing'],
    webhookOutageMs: positiveInteger('webhook-outage-ms', values['webhook-outage-ms'], 0),
    deadlineMs: positiveInteger('deadline-minutes', values['deadline-minutes']) * 60_000,
    cutOffMs: positiveInteger('cut-off-ms', values['cut-off-ms'], 0),
    calmApi: values['calm-api'],
    timeScale: positiveNumber('time-scale', values['time-scale']),
    cli: CLI,
    ...(values.dir ? { dir: values.dir } : {}),
    log: (line) => void process.stderr.write(`${line}\n`),
  };
  return { options, cluster: values.cluster, ...(values.json ? { json: values.json } : {}) };
}

function positiveNumber(name: string, value: string): number {
  const number = Number(value);
  if (!(number > 0)) throw new Error(`--${name} must be a number > 0, got ${value}`);
  return number;
}

async function main(): Promise<number> {
  const { options, json, cluster } = parseOptions(process.argv.slice(2));
  cleanUpOnSignals();
  const temporal = cluster ? await startChaosCluster(options.log) : undefined;
  try {
    const result = await runChaos({ ...options, ...(temporal ? { temporal } : {}) });
    const checks = chaosChecks(result);
    process.stdout.write(`${formatChaosReport(result, checks)}\n`);
    if (json) writeFileSync(json, `${JSON.stringify({ ...result, checks }, null, 2)}\n`);
    return checks.every((check) => check.ok) ? 0 : 1;
  } finally {
    await cleanUpAll();
    await temporal?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
