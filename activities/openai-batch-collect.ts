// openaiBatchCollect (the transfer queue): a finished batch's results, from its output file and
// then its error file, streamed line by line (providers/openai/line-splitter.ts: never a whole file
// in memory), each line's images decoded, stored and checked (openai-images.ts), each line's
// failure mapped (batch-lines.ts). A line of another attempt of the item is ignored; a line that
// is malformed, cut off or holds an image that does not decode fails its item alone.
//
// Resumable: the heartbeat carries the file and byte offset past the last line fully handled, the
// outcomes so far and their lines, so that a retry (a worker killed, a download cut off before its
// Content-Length) asks for the rest only (`Range: bytes=N-`) and stores nothing twice; a line
// handled after the last beat is handled again, and its images, already in the store byte for
// byte, are not written again. A download cut off fails the attempt only after every complete
// line it brought is handled, so the retry starts there.
//
// A worker streams at most STREAMS_PER_WORKER batches' files at once; the others' collects wait
// for a turn, heartbeating.
import { activityContext, appendSequence, recordDetails, whileAlive } from './context.js';
import type { BatchCollectInput, BatchCollectOutput, CollectedOutcome } from '../common/batch-types.js';
import { generationKey } from '../catalog/generation-key.js';
import { NetworkError } from '../api/errors.js';
import { customIdOf, keyDigest, parseCustomId, readResultLine } from '../providers/openai/batch-lines.js';
import { LineSplitter, type StreamedLine } from '../providers/openai/line-splitter.js';
import { costOfUsage } from '../providers/openai/pricing.js';
import type { PlannedItem } from '../manifest/normalize.js';
import type { OutcomeLine } from '../runstate/index.js';
import type { ApiClients } from './api-clients.js';
import type { ResolvedDeps } from './deps.js';
import { toActivityFailure } from './failures.js';
import { openaiClientFor } from './openai-batch.js';
import { storeItemImages, type ImageStoreContext } from './openai-images.js';
import type { OpenAIClient } from '../providers/openai/index.js';
import { Slots } from '../common/slots.js';

/** Where a collect is: the file (0 output, 1 error, 2 both read), the offset in it, what is done. */
export interface CollectHeartbeat {
  file: number;
  offset: number;
  outcomes: [number, CollectedOutcome][];
  lines: OutcomeLine[];
  calls: number;
  bytes: number;
}

/**
 * Batch files a worker streams at once. Each stream holds its current line several times over (its
 * bytes, its text, the parsed base64, the decoded image, the checks' pixels): about 30 MB for a line
 * of one 1K image padded to 3 MB (4.4 MB of base64). Ten batches of 2 GB output files ending together
 * on one worker (the transfer queue runs 16 activities) took it to 520 MB of RSS; two at a time keep
 * it near 300 MB (BENCHMARKS.md, OpenAI Batch), and the CPU, which decoding and checking bind, as busy.
 */
export const STREAMS_PER_WORKER = 2;

/** Turns to stream, first come first served; a collect cancelled while it waits leaves the queue. */
const streamTurns = new Slots(STREAMS_PER_WORKER);

interface Round {
  input: BatchCollectInput;
  client: OpenAIClient;
  ctx: ImageStoreContext;
  /** The round's items by custom_id, with their plan item. */
  byCustomId: Map<string, { k: number; item: PlannedItem }>;
  progress: CollectHeartbeat;
  beat: () => void;
}

export function openaiBatchCollectActivity(deps: { clients: ApiClients; resolved: ResolvedDeps }) {
  const { runState } = deps.resolved;
  return async function openaiBatchCollect(input: BatchCollectInput): Promise<BatchCollectOutput> {
    const context = activityContext();
    const meta = await runState.readPlanMeta(input.plan);
    const client = openaiClientFor(deps.clients, meta);
    const byCustomId = new Map<string, { k: number; item: PlannedItem }>();
    for (const [k, { index, attempt }] of input.items.entries()) {
      const { item } = await runState.readPlanItem(input.plan, index);
      byCustomId.set(customIdOf({ key: keyDigest(generationKey(item)), index, attempt }), { k, item });
    }
    const progress = carried(context?.info.heartbeatDetails);
    const round: Round = {
      input,
      client,
      ctx: {
        meta,
        store: deps.resolved.resultStore(meta.outputDir, meta.objectStore),
        retrying: (context?.info.attempt ?? 1) > 1,
      },
      byCustomId,
      progress,
      beat: () => {
        if (context) recordDetails(context, progress);
      },
    };
    const record = (): Promise<void> =>
      runState.appendOutcomes(input.plan, input.shard, progress.lines, appendSequence(context));
    try {
      await whileAlive(async () => {
        const done = await streamTurns.take(context?.cancellationSignal);
        try {
          await collectFiles(round);
        } finally {
          done();
        }
      });
    } catch (error) {
      round.beat();
      await record().catch(() => undefined);
      throw toActivityFailure(error);
    }
    await record();
    const done = new Map(progress.outcomes);
    return {
      outcomes: input.items.map((_, k) => done.get(k) ?? { s: 'missing' }),
      images: progress.outcomes.reduce(
        (sum, [, outcome]) => sum + ('images' in outcome ? (outcome.images ?? 0) : 0),
        0,
      ),
      calls: progress.calls,
      bytes: progress.bytes,
    };
  };
}

function carried(details: unknown): CollectHeartbeat {
  const d = details as Partial<CollectHeartbeat> | undefined;
  return {
    file: typeof d?.file === 'number' ? d.file : 0,
    offset: typeof d?.offset === 'number' ? d.offset : 0,
    outcomes: Array.isArray(d?.outcomes) ? d.outcomes : [],
    lines: Array.isArray(d?.lines) ? d.lines : [],
    calls: typeof d?.calls === 'number' ? d.calls : 0,
    bytes: typeof d?.bytes === 'number' ? d.bytes : 0,
  };
}

async function collectFiles(round: Round): Promise<void> {
  const { client, input, progress } = round;
  progress.calls++;
  const batch = await client.getBatch(input.batchId);
  const files = [batch.output_file_id ?? undefined, batch.error_file_id ?? undefined];
  for (; progress.file < files.length; progress.file++, progress.offset = 0) {
    const fileId = files[progress.file];
    if (fileId !== undefined) await streamFile(round, fileId);
    round.beat();
  }
}

/** One file from the offset the progress holds, every complete line handled in order. */
async function streamFile(round: Round, fileId: string): Promise<void> {
  const { client, progress } = round;
  progress.calls++;
  const content = await client.fileContent(fileId, progress.offset);
  const splitter = new LineSplitter(content.start);
  let cut: unknown;
  try {
    for await (const chunk of content.body) {
      progress.bytes += chunk.byteLength;
      for (const line of splitter.push(chunk)) {
        // A server that ignored the range sends the file from its start: what was handled is skipped.
        if (line.end <= progress.offset) continue;
        await handleLine(round, line);
      }
    }
  } catch (error) {
    cut = error;
  }
  const rest = splitter.rest();
  const complete =
    cut === undefined && (content.total === undefined || (rest?.end ?? splitter.offset) >= content.total);
  if (!complete) {
    throw new NetworkError(
      `GET /v1/files/${fileId}/content was cut off at byte ${splitter.offset}${content.total !== undefined ? ` of ${content.total}` : ''}: resumed from there`,
      { endpoint: 'GET /v1/files/{id}/content', cause: cut },
    );
  }
  // The last line of a file need not end with a newline.
  if (rest !== undefined && rest.end > progress.offset) await handleLine(round, rest);
}

async function handleLine(round: Round, line: StreamedLine): Promise<void> {
  if (line.text.trim() !== '') await readLine(round, line.text);
  round.progress.offset = line.end;
  round.beat();
}

async function readLine(round: Round, text: string): Promise<void> {
  const { input, progress, byCustomId } = round;
  const reading = readResultLine(text);
  if (reading.customId === undefined) return;
  const mine = byCustomId.get(reading.customId);
  // Another attempt's line (an earlier batch of the item), or no item of this round: not ours.
  if (!mine || parseCustomId(reading.customId) === undefined) return;
  const { k, item } = mine;
  const { index, attempt } = input.items[k]!;
  const taskId = `${input.batchId}/${reading.customId}`;
  const done = (outcome: CollectedOutcome, line?: OutcomeLine): void => {
    progress.outcomes = progress.outcomes.filter(([at]) => at !== k);
    progress.outcomes.push([k, outcome]);
    if (line) {
      progress.lines = progress.lines.filter((entry) => entry.index !== index);
      progress.lines.push(line);
    }
  };
  if (reading.kind !== 'images') {
    done({ s: 'failed', cost: 0, taskId, error: reading.error });
    return;
  }
  const cost = costOfUsage(item.model, reading.usage, input.mode);
  const stored = await storeItemImages(round.ctx, {
    index,
    item,
    attempt,
    taskId,
    images: reading.images,
    ...(reading.format !== undefined ? { format: reading.format } : {}),
    cost,
  });
  done(stored.outcome, stored.line);
}
