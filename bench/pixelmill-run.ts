// One pixelmill run as a user makes it: `pixelmill run manifest.yaml` in embedded mode (the CLI
// process hosts the workers), against an emulator process. Measured from outside: the run
// workflow's start-to-close time from Temporal, the CLI's peak RSS from /proc, the histories left
// in Temporal, the bytes in report.jsonl and the calls the emulator counted.
import { createReadStream, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { Client, Connection } from '@temporalio/client';
import { runWorkflowId } from '../common/names.js';
import { writeItemsFile, writeManifest } from './catalog-files.js';
import { benchCliEnv, type EmulatorProcess } from './emulator-process.js';
import { mapValues, round } from './figures.js';
import { runHistoryFigures, type HistoryFigures } from './histories.js';
import {
  spawnCli,
  exitedBy,
  ProcessSampler,
  startDevServerIn,
  stopRegisteredDevServer,
  type ThreadGroup,
} from './processes.js';

export interface PixelmillRunSpec {
  /** An empty folder for the manifest, items, output and Temporal state. */
  dir: string;
  name: string;
  emulator: EmulatorProcess;
  items: number;
  requestsPerSecond: number;
  maxInFlight: number;
  /** The manifest's `webhooks` block, when the run uses webhooks. */
  webhooks?: Record<string, unknown>;
  /** Epoch ms after which the CLI is interrupted and the run reported as unfinished. */
  deadline: number;
  /** An S3 output instead of the local folder: plan, state, images and report in this bucket. */
  s3?: BenchS3Output;
  /** Items (1-based) whose prompts are edited: a second run in the same folder is incremental. */
  edited?: (index: number) => boolean;
  /** A folder for V8 CPU profiles of the CLI's threads (node --cpu-prof), written as it exits. */
  cpuProfileDir?: string;
}

export interface BenchS3Output {
  endpoint: string;
  bucket: string;
  /** The AWS variables the CLI (and its workers) get. */
  env: NodeJS.ProcessEnv;
  /** To read the report back, with the server's credentials. */
  client: S3Client;
}

export interface PixelmillRunFigures {
  finished: boolean;
  exit_code: number | null;
  /** Run workflow start to close, from Temporal (workers were already polling). */
  wall_s: number;
  /** `pixelmill run` spawned to exited: adds CLI start, workflow bundling, report printing. */
  process_s: number;
  items_completed: number;
  images: number;
  bytes_stored: number;
  peak_rss_mb: number;
  /** The Temporal dev server's own peak RSS (a separate process). */
  temporal_server_peak_rss_mb: number;
  /** CPU seconds, user and system: the CLI hosting the workers, and the dev server during the run. */
  cpu_s: number;
  /** The CLI's CPU seconds by kind of thread (processes.ts, ThreadGroup). */
  cpu_by_thread_s: Record<ThreadGroup, number>;
  temporal_server_cpu_s: number;
  histories: HistoryFigures;
  cli_log: string;
}

interface ReportTotals {
  completed: number;
  images: number;
  bytes: number;
}

async function reportTotals(input: NodeJS.ReadableStream): Promise<ReportTotals> {
  const totals: ReportTotals = { completed: 0, images: 0, bytes: 0 };
  for await (const line of createInterface({ input })) {
    if (!line.trim()) continue;
    const entry = JSON.parse(line) as { status: string; images: { bytes: number }[] };
    if (entry.status === 'completed') totals.completed++;
    totals.images += entry.images.length;
    totals.bytes += entry.images.reduce((sum, image) => sum + image.bytes, 0);
  }
  return totals;
}

/** For a run stopped before its report: the images already in the output folder (one per item). */
function storedSoFar(outputDir: string): ReportTotals {
  const totals: ReportTotals = { completed: 0, images: 0, bytes: 0 };
  if (!existsSync(outputDir)) return totals;
  for (const entry of readdirSync(outputDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.png')) continue;
    totals.images++;
    totals.bytes += statSync(join(entry.parentPath, entry.name)).size;
  }
  totals.completed = totals.images;
  return totals;
}

async function s3Report(s3: BenchS3Output, name: string): Promise<NodeJS.ReadableStream> {
  const answer = await s3.client.send(
    new GetObjectCommand({ Bucket: s3.bucket, Key: `${name}/report.jsonl` }),
  );
  return answer.Body as NodeJS.ReadableStream;
}

async function runTimes(address: string, workflowId: string): Promise<{ wallS: number; closed: boolean }> {
  const connection = await Connection.connect({ address });
  try {
    const description = await new Client({ connection }).workflow.getHandle(workflowId).describe();
    const end = description.closeTime ?? new Date();
    return {
      wallS: (end.getTime() - description.startTime.getTime()) / 1000,
      closed: description.closeTime !== undefined,
    };
  } finally {
    await connection.close();
  }
}

export async function runPixelmill(spec: PixelmillRunSpec): Promise<PixelmillRunFigures> {
  const itemsFile = await writeItemsFile(spec.dir, spec.items, spec.edited);
  const manifest = writeManifest(spec.dir, {
    name: spec.name,
    itemsFile,
    requestsPerSecond: spec.requestsPerSecond,
    maxInFlight: spec.maxInFlight,
    ...(spec.webhooks ? { extra: { webhooks: spec.webhooks } } : {}),
    ...(spec.s3
      ? {
          output: {
            dir: `s3://${spec.s3.bucket}/${spec.name}`,
            endpoint: spec.s3.endpoint,
            force_path_style: true,
          },
        }
      : {}),
  });
  const stateDir = join(spec.dir, '.pixelmill');
  try {
    // Started here rather than by the CLI so its start-up is not part of the measured run.
    const { server, env: serverEnv } = await startDevServerIn(stateDir);
    const env: NodeJS.ProcessEnv = {
      ...benchCliEnv(serverEnv, spec.emulator.url),
      ...spec.s3?.env,
      // The embedded receiver on a free local port, called at its own address.
      PIXELMILL_WEBHOOK_URL: '',
      PIXELMILL_WEBHOOK_PORT: '',
    };
    const started = performance.now();
    const cli = spawnCli(['run', manifest, '--no-progress'], { cwd: spec.dir, env }, spec.cpuProfileDir);
    const sampler = new ProcessSampler(cli.pid!, 200, { threads: true });
    const serverSampler = new ProcessSampler(server.pid, 1_000);
    let log = '';
    cli.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    cli.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
    const { code, interrupted } = await exitedBy(cli, spec.deadline);
    const processS = (performance.now() - started) / 1000;
    const peakRssMb = sampler.stop();
    const serverRssMb = serverSampler.stop();
    const logFile = join(spec.dir, 'cli.log');
    writeFileSync(logFile, log);
    if (code !== 0 && code !== 3 && !interrupted)
      throw new Error(
        `pixelmill run exited with code ${code}; see ${logFile}: ${log.trim().split('\n').at(-1)}`,
      );

    const workflowId = runWorkflowId(spec.name);
    const { wallS, closed } = await runTimes(server.address, workflowId);
    const histories = await runHistoryFigures(server.address, workflowId, spec.items);
    const totals = !closed
      ? storedSoFar(join(spec.dir, 'out'))
      : await reportTotals(
          spec.s3
            ? await s3Report(spec.s3, spec.name)
            : createReadStream(join(spec.dir, 'out', 'report.jsonl')),
        );
    return {
      finished: closed && !interrupted,
      exit_code: code,
      wall_s: Math.round(wallS * 100) / 100,
      process_s: Math.round(processS * 100) / 100,
      items_completed: totals.completed,
      images: totals.images,
      bytes_stored: totals.bytes,
      peak_rss_mb: peakRssMb,
      temporal_server_peak_rss_mb: serverRssMb,
      cpu_s: round(sampler.cpuSeconds(), 2),
      cpu_by_thread_s: mapValues(sampler.cpuSecondsByThread(), (s) => round(s, 2)),
      temporal_server_cpu_s: round(serverSampler.cpuSeconds(), 2),
      histories,
      cli_log: logFile,
    };
  } finally {
    await stopRegisteredDevServer(stateDir);
  }
}
