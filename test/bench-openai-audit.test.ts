// The OpenAI Batch benchmark's audit (bench/openai-batch-audit.ts) on hand-made ground truth: an
// expired batch's finished lines stored from it, the rest completed by the retry, and what it
// counts as sent twice or stored without a line that ran.
import { describe, expect, it } from 'vitest';
import { auditBatchRun, type ReportLine, type TruthLine } from '../bench/openai-batch-audit.js';

const key = 'a'.repeat(32);
const line = (batch: string, index: number, attempt: number, ran: boolean, status: string): TruthLine => ({
  batch_id: batch,
  custom_id: `${key}:${index}:${attempt}`,
  outcome: 'succeeded',
  ran,
  batch_status: status,
});
const stored = (index: number, batch: string, attempt: number): ReportLine => ({
  id: `item-${index}`,
  status: 'completed',
  attempts: attempt,
  task_id: `${batch}/${key}:${index}:${attempt}`,
  images: [{ path: `item-${index}_0.png` }],
});

describe('the OpenAI batch audit', () => {
  it('counts an expired batch kept and retried, with nothing sent twice', () => {
    const truth = [
      line('b1', 0, 1, true, 'expired'),
      line('b1', 1, 1, false, 'expired'),
      line('b2', 1, 2, true, 'completed'),
    ];
    const audit = auditBatchRun(truth, [stored(0, 'b1', 1), stored(1, 'b2', 2)], 2);
    expect(audit).toMatchObject({
      sent: 2,
      lines: 3,
      custom_ids_twice: 0,
      sent_again_after_success: 0,
      completed: 2,
      completed_without_truth: 0,
      finished_in_expired: 1,
      stored_from_expired: 1,
      unfinished_in_expired: 1,
      completed_by_retry: 1,
    });
  });

  it('finds an item sent again after it succeeded, a custom_id twice, and a result with no line that ran', () => {
    const truth = [
      line('b1', 0, 1, true, 'expired'),
      line('b2', 0, 2, true, 'completed'),
      line('b2', 1, 1, false, 'completed'),
      line('b3', 1, 1, false, 'completed'),
    ];
    const audit = auditBatchRun(truth, [stored(0, 'b2', 2), stored(1, 'b3', 1)], 3);
    expect(audit.sent_again_after_success).toBe(1);
    expect(audit.custom_ids_twice).toBe(1);
    expect(audit.completed_without_truth).toBe(1);
    // Stored from the retry although the expired batch's line had finished: not kept from it.
    expect(audit.stored_from_expired).toBe(0);
    expect(audit.missing_from_report).toBe(1);
  });
});
