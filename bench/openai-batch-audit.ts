// The OpenAI Batch benchmark's audit (bench/openai-batch.ts), pure: a finished run's report.jsonl
// read against the emulator's ground truth (GET /_emulator/requests, one line per request line it
// accepted in a batch), which says what was sent, in which batch, and whether it ran before its
// batch ended. Custom ids are `<generation key>:<plan index>:<attempt>` (docs/providers.md#openai).

/** One request line the emulator accepted (emulator/openai/routes/admin.ts GroundTruthLine). */
export interface TruthLine {
  batch_id: string;
  custom_id: string;
  outcome: 'succeeded' | number;
  ran: boolean;
  batch_status: string;
}

/** A report.jsonl line, the fields the audit reads. */
export interface ReportLine {
  id: string;
  status: string;
  attempts: number;
  task_id: string | null;
  images: { path: string }[];
}

export interface BatchAudit {
  items: number;
  /** Items with a request line in the emulator's batches. */
  sent: number;
  /** Request lines accepted, all batches together. */
  lines: number;
  /** custom_ids on more than one line (the same item and attempt sent twice). */
  custom_ids_twice: number;
  /** Items sent again after a line of theirs had run and succeeded: sent twice beyond the retry. */
  sent_again_after_success: number;
  /** Items the report says completed, and those stored from a line that did not succeed at the provider. */
  completed: number;
  completed_without_truth: number;
  /** Items whose report line is missing. */
  missing_from_report: number;
  /** Lines that ran and succeeded in batches that expired, and of those, the ones stored from that line. */
  finished_in_expired: number;
  stored_from_expired: number;
  /** Items an expired batch did not finish, and of those, the ones a later batch completed. */
  unfinished_in_expired: number;
  completed_by_retry: number;
}

/** `<key>:<index>:<attempt>` apart. */
export function parseCustomId(customId: string): { index: number; attempt: number } {
  const [, index, attempt] = customId.split(':');
  return { index: Number(index), attempt: Number(attempt) };
}

export function auditBatchRun(
  truth: readonly TruthLine[],
  report: readonly ReportLine[],
  items: number,
): BatchAudit {
  const byCustomId = new Map<string, number>();
  const byIndex = new Map<number, TruthLine[]>();
  for (const line of truth) {
    byCustomId.set(line.custom_id, (byCustomId.get(line.custom_id) ?? 0) + 1);
    const { index } = parseCustomId(line.custom_id);
    const lines = byIndex.get(index) ?? [];
    lines.push(line);
    byIndex.set(index, lines);
  }
  const succeeded = (line: TruthLine): boolean => line.ran && line.outcome === 'succeeded';
  let sentAgain = 0;
  for (const lines of byIndex.values()) {
    const firstSuccess = lines
      .filter(succeeded)
      .map((line) => parseCustomId(line.custom_id).attempt)
      .sort((a, b) => a - b)[0];
    if (firstSuccess !== undefined && lines.some((l) => parseCustomId(l.custom_id).attempt > firstSuccess))
      sentAgain++;
  }
  // The report's task_id is `<batch id>/<custom id>` for an item stored from a batch line.
  const storedFrom = new Map<number, string>();
  let completed = 0;
  let withoutTruth = 0;
  const truthByCustomId = new Map(truth.map((line) => [line.custom_id, line]));
  for (const line of report) {
    if (line.status !== 'completed') continue;
    completed++;
    const customId = line.task_id?.split('/')[1];
    const source = customId === undefined ? undefined : truthByCustomId.get(customId);
    if (source === undefined || !succeeded(source)) withoutTruth++;
    if (customId !== undefined) storedFrom.set(parseCustomId(customId).index, customId);
  }
  let finishedInExpired = 0;
  let storedFromExpired = 0;
  let unfinishedInExpired = 0;
  let completedByRetry = 0;
  for (const line of truth) {
    if (line.batch_status !== 'expired') continue;
    const { index } = parseCustomId(line.custom_id);
    if (succeeded(line)) {
      finishedInExpired++;
      if (storedFrom.get(index) === line.custom_id) storedFromExpired++;
    } else {
      unfinishedInExpired++;
      const stored = storedFrom.get(index);
      if (stored !== undefined && parseCustomId(stored).attempt > parseCustomId(line.custom_id).attempt)
        completedByRetry++;
    }
  }
  return {
    items,
    sent: byIndex.size,
    lines: truth.length,
    custom_ids_twice: [...byCustomId.values()].filter((n) => n > 1).length,
    sent_again_after_success: sentAgain,
    completed,
    completed_without_truth: withoutTruth,
    missing_from_report: Math.max(0, items - report.length),
    finished_in_expired: finishedInExpired,
    stored_from_expired: storedFromExpired,
    unfinished_in_expired: unfinishedInExpired,
    completed_by_retry: completedByRetry,
  };
}
