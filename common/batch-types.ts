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
