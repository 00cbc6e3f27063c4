// Inputs and outputs of the batch shard's activities (workflows/batch-shard.ts): a shard's items
// go to a provider as one batch file per round, polled as one, collected from its result files.
// Plain data, as every workflow input: plan indices and attempts, never prompts or images.
import type { ErrorSummary, PlanRef } from './types.js';

/** One item of a round: its plan index and the attempt this round is for it. */
export interface BatchItem {
  index: number;
  attempt: number;
}

export interface BatchSubmitInput {
  plan: PlanRef;
  /** The run's workflow id: with shard and round, what names the batch at the provider. */
  runId: string;
  shard: number;
  /** 1 for the shard's first batch; each resubmission of unfinished items is the next round. */
  round: number;
  items: BatchItem[];
}

export interface BatchSubmitOutput {
  batchId: string;
  /** An earlier attempt (or execution) had created it: found by its metadata, not created again. */
  reused: boolean;
  calls: number;
  /** The images the batch's requests ask for (each item's `n`): what it holds of the enqueued limit. */
  images?: number;
}

export interface BatchRef {
  plan: PlanRef;
  batchId: string;
}

/** A batch as a poll saw it. */
export interface BatchStatusOutput {
  status: string;
  /** Requests finished so far (completed and failed), when told. */
  finished?: number;
  total?: number;
  /** Of those, the requests that succeeded and those that failed (`request_counts`), when told. */
  completed?: number;
  failed?: number;
  /** A batch that failed validation: why (its first error), for its items' failures. */
  failure?: ErrorSummary;
}

export interface BatchCollectInput {
  plan: PlanRef;
  shard: number;
  batchId: string;
  items: BatchItem[];
  /** `api.mode` the items ran in: their cost's rate. */
  mode: 'batch' | 'sync';
}

/**
 * What became of each item of the round, compact (500 items: a few kilobytes):
 * `done[k]` is the k-th item's status code, `error[k]` its failure when it has one.
 */
export interface BatchCollectOutput {
  /** Parallel to the input's items. */
  outcomes: CollectedOutcome[];
  /** Images stored this round. */
  images: number;
  calls: number;
  /** The file bytes read (output and error files), for the benchmarks. */
  bytes: number;
}

export type CollectedOutcome =
  /** Every image stored and checked. */
  | { s: 'completed'; cost: number; images: number; taskId: string }
  /** Failed: final or for the retry policy to decide (its error type and code say). */
  | { s: 'failed'; cost: number; taskId: string | null; error: ErrorSummary; images?: number }
  /** No line in either file: the batch ended before it ran (expired, cancelled). */
  | { s: 'missing' };

/** One held generation (sync mode): the item is stored when it resolves. */
export interface GenerateItemInput {
  plan: PlanRef;
  shard: number;
  index: number;
  attempt: number;
}

export type GenerateItemOutput = CollectedOutcome & { calls: number };

/**
 * What a batch run's batches are doing, as its shards tell it: the one vocabulary of the terminal,
 * `status` (and `--json`), summary.json and the Temporal UI (batch-totals.ts's describeBatches).
 * A run in batch mode shows this instead of API rates: its few calls skip the rate gate.
 */
export interface BatchTotals {
  /** Batches created and not ended yet. */
  inFlight: number;
  /** Batches ended, by how they ended. */
  completed: number;
  expired: number;
  failed: number;
  cancelled: number;
  /** The requests of the batches in flight, by state, as their last status call counted them. */
  requests: { waiting: number; completed: number; failed: number };
  /** Images the batches in flight ask for, and the most the run keeps waiting (`api.max_enqueued_images`). */
  enqueuedImages: number;
  enqueuedLimit?: number;
  /** The next status call of a batch in flight, the soonest (ISO 8601). */
  nextPollAt?: string;
}
