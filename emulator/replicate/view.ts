// A prediction as the API shows it at one instant: the same object for GET, create and cancel
// answers and webhook bodies; list entries leave out `logs` (and `output` when the list knob says
// so), as the API reference's list example does.
//
// Field order follows the API reference's GET example. Times are the clock's; `metrics` are in
// emulated seconds (time_scale undone), since clients estimate cost from predict_time. Once the
// retention has passed, `data_removed` is true, `input` is `{}`, `output` null and `logs` empty.
import { isoTime, type PredictionJson } from './wire.js';
import type { Prediction, PredictionStore } from './predictions.js';

export interface ViewContext {
  store: PredictionStore;
  /** Where urls.get/cancel/web point (base_url, or the emulator's own URL). */
  apiBaseUrl: string;
  /** Where output files are served (delivery_base_url, or `{url}/delivery`). */
  deliveryBaseUrl: string;
  includeOutputInList: boolean;
  includeLogsInList: boolean;
  timeScale: number;
}

export type ViewKind = 'full' | 'list' | 'output_event';

const EXTENSIONS = { webp: 'webp', jpg: 'jpg', png: 'png' } as const;
/** The path segment real delivery URLs carry before the file key (e.g. replicate.delivery/xezq/...). */
export const DELIVERY_PREFIX = 'xezq';

/** The file names of a prediction's outputs: `out-0.webp`... for a list, `output.webp` for one URL. */
export function outputFileName(job: Prediction, index: number): string {
  const ext = EXTENSIONS[job.data.plan.format];
  return isSingle(job) ? `output.${ext}` : `out-${index}.${ext}`;
}

const isSingle = (job: Prediction): boolean => job.data.plan.outputKind === 'single';

export function outputUrls(ctx: ViewContext, job: Prediction): string[] {
  return Array.from(
    { length: job.data.plan.count },
    (_, i) => `${ctx.deliveryBaseUrl}/${DELIVERY_PREFIX}/${job.data.fileKey}/${outputFileName(job, i)}`,
  );
}

function logsOf(job: Prediction, status: string, count: number, error: string | null): string {
  if (status === 'starting' || status === 'aborted') return '';
  let logs = `Using seed: ${job.data.seed}\n`;
  if (status === 'succeeded') logs += `Total safe images: ${count} out of ${count}\n`;
  if (error) logs += `${error}\n`;
  return logs;
}

export function predictionJson(
  ctx: ViewContext,
  job: Prediction,
  now: number,
  kind: ViewKind = 'full',
): PredictionJson {
  const state = ctx.store.stateAt(job, now);
  const removed = now >= ctx.store.removedAt(job);
  const { data } = job;
  // The output event is sent when the files are up, just before the prediction is marked done.
  const shown =
    kind === 'output_event'
      ? { ...state, status: 'processing' as const, completedAt: null, error: null }
      : state;
  const urls = outputUrls(ctx, job);
  const output = state.hasOutput && !removed ? (isSingle(job) ? urls[0]! : urls) : null;
  const self = `${ctx.apiBaseUrl}/v1/predictions/${job.id}`;
  const withLogs = kind !== 'list' || ctx.includeLogsInList;
  const withOutput = kind !== 'list' || ctx.includeOutputInList;
  let metrics: PredictionJson['metrics'];
  if (shown.completedAt !== null) {
    const total = round6((shown.completedAt - job.record.submittedAt) / (1000 * ctx.timeScale));
    metrics =
      shown.startedAt === null
        ? { total_time: total }
        : { predict_time: round6(ctx.store.predictSeconds(job)), total_time: total };
  }
  return {
    id: job.id,
    model: data.model,
    version: data.version,
    input: removed ? {} : data.input,
    ...(withLogs ? { logs: removed ? '' : logsOf(job, shown.status, data.plan.count, shown.error) } : {}),
    ...(withOutput ? { output } : {}),
    data_removed: removed,
    error: shown.error,
    status: shown.status,
    source: 'api',
    created_at: isoTime(job.record.submittedAt),
    started_at: shown.startedAt === null ? null : isoTime(shown.startedAt),
    completed_at: shown.completedAt === null ? null : isoTime(shown.completedAt),
    ...(data.deadlineAt === null ? {} : { deadline: isoTime(data.deadlineAt) }),
    urls: { cancel: `${self}/cancel`, get: self, web: `${ctx.apiBaseUrl}/p/${job.id}` },
    ...(metrics ? { metrics } : {}),
  };
}

const round6 = (n: number): number => Math.round(n * 1e6) / 1e6;
