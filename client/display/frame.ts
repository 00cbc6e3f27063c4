// What the progress display says, as text: a few lines redrawn in place on a terminal, or one
// plain line for logs and pipes. Pure functions of a progress snapshot and its rates; colours
// come in as a picocolors instance, so "no colour" is the same code with identity formatters.
import { stripVTControlCharacters } from 'node:util';
import picocolors from 'picocolors';
import { batchParts } from '../../common/batch-totals.js';
import { describeRunRates } from '../../governor/describe.js';
import type { ItemCounts, RunState } from '../../common/types.js';
import type { LiveProgress } from '../progress.js';
import { describeRetrying } from '../retrying.js';
import type { Rates } from './rates.js';
import { finishedItems } from '../../common/item-counts.js';

export type Colors = ReturnType<typeof picocolors.createColors>;

export interface ProgressView {
  progress: LiveProgress;
  rates: Rates;
  /** Since the run started, when known. */
  elapsedMs?: number;
  /** The moment of this view (epoch ms), for the time left to a deadline. */
  nowMs?: number;
}

const BAR_WIDTH = 30;

/** `1:05`, `1:02:03`. */
export function formatDuration(seconds: number): string {
  const total = Math.max(0, Math.round(seconds));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = String(total % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`;
}

/** A rate with a sensible number of digits, or `--` while unknown. */
export function formatRate(value: number | undefined): string {
  if (value === undefined) return '--';
  if (value >= 100) return String(Math.round(value));
  return value.toFixed(1);
}

function formatEta(view: ProgressView): string {
  const { state, itemCount } = view.progress.run;
  if (state === 'paused') return 'paused';
  if (state === 'finished') return 'done';
  if (state === 'preparing' || itemCount === 0) return '--';
  const eta = view.rates.etaSeconds;
  return eta === undefined ? '--' : formatDuration(eta);
}

function paintState(state: RunState, c: Colors): string {
  if (state === 'finished') return c.green(state);
  if (state === 'paused' || state === 'cancelling') return c.yellow(state);
  return c.cyan(state);
}

function bar(done: number, total: number, c: Colors): string {
  const filled = total > 0 ? Math.round((done / total) * BAR_WIDTH) : 0;
  return c.green('█'.repeat(filled)) + c.dim('░'.repeat(BAR_WIDTH - filled));
}

/** `12 + 30 reserved of 100 budget`: charged as read from finished tasks, plus what the API holds. */
function credits(progress: LiveProgress): string {
  const round = (value: number): number => Math.round(value * 100) / 100;
  const reserved = progress.creditsReserved ? ` + ${round(progress.creditsReserved)} reserved` : '';
  const budget = progress.run.budgetCredits;
  return `${round(progress.creditsSpent)}${reserved}${budget === undefined ? '' : ` of ${budget} budget`}`;
}

/**
 * The measured request rate and its window, against the run's limit once the run has read it:
 * a fixed rate, or the discovered rates per group and where they come from; a batch run's
 * batches instead.
 */
function requests(view: ProgressView): string[] {
  const { run, rates, batches } = view.progress;
  // A batch run's few calls skip the rate gate: its batches say what it is doing.
  if (batches) return batchParts(batches, view.nowMs ?? Date.now());
  const { requestsPerSecond, requestsWindowS } = view.rates;
  const window = requestsWindowS !== undefined ? ` (${requestsWindowS} s avg)` : '';
  const measured = `requests ${formatRate(requestsPerSecond)}/s${window}`;
  if (rates?.mode === 'auto') return [`${measured} · rate ${describeRunRates(rates)}`];
  const limit = run.requestsPerSecond;
  return [`${measured}${run.rateCaps === undefined && limit > 0 ? ` of ${limit}/s` : ''}`];
}

/** `deadline 08:00Z (in 1:05:00)`, or `deadline passed`, for a run with `limits.deadline`. */
function deadline(view: ProgressView): string[] {
  const at = view.progress.run.deadlineAt;
  if (at === undefined) return [];
  const left = at - (view.nowMs ?? Date.now());
  const when = new Date(at).toISOString().slice(11, 16);
  return [left > 0 ? `deadline ${when}Z (in ${formatDuration(left / 1000)})` : 'deadline passed'];
}

/** Counts other than the five every run has, when there are any; tasks given up or rejected. */
function rareCounts(counts: ItemCounts, givenUp = 0, rejected = 0): string[] {
  return (['expired', 'cancelled', 'skipped'] as const)
    .filter((key) => counts[key] > 0)
    .map((key) => `${key} ${counts[key]}`)
    .concat(givenUp > 0 ? [`given up ${givenUp}`] : [])
    .concat(rejected > 0 ? [`failed checks ${rejected}`] : []);
}

/** An incremental run's items carried over (among the completed), and those fetched again. */
function carried(view: ProgressView): string[] {
  const carryOver = view.progress.run.carryOver;
  if (!carryOver) return [];
  return [
    `reused ${carryOver.reused}/${carryOver.items}`,
    ...(carryOver.restored > 0 ? [`restored ${carryOver.restored}`] : []),
    ...(carryOver.regenerated > 0 ? [`regenerated ${carryOver.regenerated}`] : []),
  ];
}

/**
 * `parts` joined by `separator` into lines of at most `columns` visible characters, broken only
 * between parts: a terminal's own wrapping would cut a count in the middle of its word.
 */
export function wrapParts(parts: readonly string[], separator: string, columns: number): string[] {
  const width = (text: string): number => stripVTControlCharacters(text).length;
  const lines: string[] = [];
  let line = '';
  for (const part of parts) {
    if (line !== '' && width(line) + width(separator) + width(part) > columns) {
      lines.push(line);
      line = part;
    } else {
      line = line === '' ? part : line + separator + part;
    }
  }
  if (line !== '') lines.push(line);
  return lines;
}

/** A sentence broken between words to fit `columns`. */
const wrapWords = (text: string, columns: number): string[] => wrapParts(text.split(' '), ' ', columns);

/** Before its plan exists a run has no item count: nothing to count yet, and no `0/0`. */
const PREPARING = 'checking the manifest and writing the plan';
const planned = (view: ProgressView): boolean =>
  view.progress.run.state !== 'preparing' || view.progress.run.itemCount > 0;

/** The live display: a header, a bar, the counts per state, rates and credits. */
export function renderFrame(view: ProgressView, c: Colors, columns = Number.POSITIVE_INFINITY): string {
  const { run, counts } = view.progress;
  const total = run.itemCount;
  const done = finishedItems(counts);
  const percent = total > 0 ? Math.floor((done / total) * 100) : 0;
  const header = [
    c.bold(run.runId),
    ...(run.emulated ? [c.magenta('emulated')] : []),
    paintState(run.state, c),
    ...(view.elapsedMs !== undefined ? [c.dim(`elapsed ${formatDuration(view.elapsedMs / 1000)}`)] : []),
  ].join('  ');
  const states = [
    `queued ${counts.queued}`,
    `submitted ${counts.submitted}`,
    `processing ${counts.processing}`,
    `storing ${counts.storing}`,
    c.green(`completed ${counts.completed}`),
    (counts.failed > 0 ? c.red : c.dim)(`failed ${counts.failed}`),
    ...rareCounts(counts, view.progress.tasksGivenUp, view.progress.tasksRejected).map((text) =>
      c.yellow(text),
    ),
    ...carried(view).map((text) => c.cyan(text)),
  ];
  const rates = [
    ...requests(view),
    `images ${formatRate(view.rates.imagesPerMinute)}/min`,
    `ETA ${formatEta(view)}`,
  ];
  const wrapped = (parts: string[]): string[] => wrapParts(parts, c.dim(' · '), columns);
  if (!planned(view)) return [header, c.dim(PREPARING)].join('\n');
  const lines = [
    header,
    `${bar(done, total, c)} ${String(percent).padStart(3)}%  ${done}/${total} items final`,
    ...wrapped(states),
    ...wrapped(rates),
    ...wrapped([`credits ${credits(view.progress)}`, ...deadline(view)]),
    ...(run.reason ? wrapWords(run.reason, columns).map((line) => c.yellow(line)) : []),
    ...(view.progress.retrying
      ? wrapWords(describeRetrying(view.progress.retrying), columns).map((line) => c.red(line))
      : []),
  ];
  return lines.join('\n');
}

/** The plain display: one line, no escapes, stable field order (greppable in CI logs). */
export function renderLine(view: ProgressView): string {
  const { run, counts } = view.progress;
  if (!planned(view)) return `${run.runId}${run.emulated ? ' (emulated)' : ''}: preparing · ${PREPARING}`;
  const parts = [
    `${run.runId}${run.emulated ? ' (emulated)' : ''}: ${run.state}`,
    `${finishedItems(counts)}/${run.itemCount} final`,
    `queued ${counts.queued}`,
    `submitted ${counts.submitted}`,
    `processing ${counts.processing}`,
    `storing ${counts.storing}`,
    `completed ${counts.completed}`,
    `failed ${counts.failed}`,
    ...rareCounts(counts, view.progress.tasksGivenUp, view.progress.tasksRejected),
    ...carried(view),
    ...requests(view),
    `images ${formatRate(view.rates.imagesPerMinute)}/min`,
    `ETA ${formatEta(view)}`,
    `credits ${credits(view.progress)}`,
    ...deadline(view),
  ];
  const retrying = view.progress.retrying ? ` [${describeRetrying(view.progress.retrying)}]` : '';
  return parts.join(' · ') + (run.reason ? ` (${run.reason})` : '') + retrying;
}
