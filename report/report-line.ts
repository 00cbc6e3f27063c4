// One line of `report.jsonl` per manifest item: the run's public output contract (README.md,
// "Output contract"), with exactly the fields other tools read, made from the item's newest outcome.
import { taskIdOf } from '../common/task-ref.js';
import { FailureType } from '../common/failure-types.js';
import type { ItemStatus } from '../common/types.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { OutcomeLine } from '../runstate/index.js';

export const REPORT_FILE = 'report.jsonl';
export const SUMMARY_FILE = 'summary.json';

export const NOT_RUN = {
  type: FailureType.NotRun,
  code: 'not_run',
  message: 'the run ended before this item was finished: it was not submitted, or its task was not collected',
} as const;

/** One stored image of a report line, with what its checks found (absent for older outputs). */
export interface ReportImage {
  path: string;
  sha256: string;
  bytes: number;
  source_url: string;
  format?: string;
  width?: number;
  height?: number;
  /** Its thumbnail, relative to the output: what the gallery shows. */
  thumbnail?: string;
  /** The checks it failed (checks/image-checks.ts), at their levels. */
  checks?: { check: string; level: 'error' | 'warn'; message: string }[];
}

/** One line of report.jsonl; the field order here is the order in the file. */
export interface ReportLine {
  id: string;
  /** With `variants`: the source item (product) and the variant this output is of. */
  product?: string;
  variant?: string;
  /** The item's variables (its row's other columns, or its `variables`), when it has any. */
  variables?: Record<string, string>;
  status: ItemStatus;
  task_id: string | null;
  attempts: number;
  credits_cost: number;
  images: ReportImage[];
  error: { type: string; code: string; message: string } | null;
  /** Carried over by an incremental run: the run that generated it (workflow id @ execution). */
  reused_from?: string;
}

/** What a report line says of the item itself: its id, and what it was made from. */
export type ReportedItem = Pick<PlannedItem, 'id' | 'product' | 'variant' | 'variables'>;

function itemFields(
  item: ReportedItem | string,
): Pick<ReportLine, 'id' | 'product' | 'variant' | 'variables'> {
  if (typeof item === 'string') return { id: item };
  return {
    id: item.id,
    ...(item.product !== undefined ? { product: item.product } : {}),
    ...(item.variant !== undefined ? { variant: item.variant } : {}),
    ...(item.variables !== undefined ? { variables: item.variables } : {}),
  };
}

/**
 * The line of `item` (a planned item, or an id alone); an item without an outcome was never
 * finished: `cancelled`, NOT_RUN.
 */
export function reportLine(item: ReportedItem | string, outcome: OutcomeLine | undefined): ReportLine {
  if (outcome === undefined) {
    return {
      ...itemFields(item),
      status: 'cancelled',
      task_id: null,
      attempts: 0,
      credits_cost: 0,
      images: [],
      error: { ...NOT_RUN },
    };
  }
  return {
    ...itemFields(item),
    status: outcome.status,
    // The provider's own id: what its console and its webhooks name (not the locator pixelmill keeps).
    task_id: outcome.task_id === null ? null : taskIdOf(outcome.task_id),
    attempts: outcome.attempts,
    credits_cost: outcome.credits_cost,
    images: outcome.images.map((image) => ({
      path: image.path,
      sha256: image.sha256,
      bytes: image.bytes,
      source_url: image.source_url,
      ...(image.format !== undefined ? { format: image.format } : {}),
      ...(image.width !== undefined ? { width: image.width, height: image.height ?? 0 } : {}),
      ...(image.thumbnail !== undefined ? { thumbnail: image.thumbnail } : {}),
      ...(image.checks?.length ? { checks: image.checks } : {}),
    })),
    error:
      outcome.error === null
        ? null
        : { type: outcome.error.type, code: outcome.error.code, message: outcome.error.message },
    ...(outcome.reused_from !== undefined ? { reused_from: outcome.reused_from } : {}),
  };
}
