// The catalog index: what an output holds, by generation key. One JSON-lines file in the run's
// state (`<output>/.pixelmill/catalog.jsonl`, or that object under an S3 output's prefix): a
// header line naming the catalog and the run that wrote it last, then one line per stored result.
// Every run rewrites it when its report is written; the next run of the catalog reads it to carry
// over what did not change. It is a guide, not the truth: what is really stored is checked.
import { z } from 'zod';
import { ImageRecordSchema, parseJsonLines } from '../runstate/index.js';

const FORMAT = 1;

/** A stored image as the run's outcomes record it, with what its checks found. */
const ImageSchema = ImageRecordSchema;

const EntrySchema = z.object({
  key: z.string(),
  id: z.string(),
  images: z.array(ImageSchema).min(1),
  task_id: z.string().nullable(),
  attempts: z.number().int().min(0),
  credits_cost: z.number().min(0),
  /** The run (workflow id @ execution) that generated the result. */
  made_by: z.string(),
  /** The last run whose manifest had an item with this key. */
  used_by: z.string(),
  expires_at: z.number().optional(),
});
export type CatalogEntry = z.infer<typeof EntrySchema>;

const HeaderSchema = z.object({
  format: z.literal(FORMAT),
  catalog: z.string(),
  /** The run that wrote the index (workflow id @ execution). */
  run: z.string(),
  manifest_hash: z.string(),
  /** How many items its manifest had. */
  items: z.number().int().min(0),
  finished_at: z.string(),
  /** The submit rate in force at its end (per second), for the next plan's estimate. */
  submit_rate: z.number().positive().optional(),
  /** Its median generation time (ms), learned from its lookups. */
  generation_ms: z.number().positive().optional(),
});
export type CatalogHeader = z.infer<typeof HeaderSchema>;

export interface CatalogIndex {
  header: CatalogHeader;
  entries: CatalogEntry[];
}

/** The index in `text`, or undefined when its header is not one (a foreign or damaged file). */
export function parseCatalogIndex(text: string): CatalogIndex | undefined {
  const lines = parseJsonLines(text);
  const first = lines.next();
  const header = first.done ? undefined : HeaderSchema.safeParse(first.value);
  if (!header?.success) return undefined;
  const entries: CatalogEntry[] = [];
  // A damaged line loses its entry, not the index: that item is generated again. The usual
  // line is checked by hand (zod's parse of 100,000 entries was a tenth of a big plan's time).
  for (const value of lines) {
    if (isWellFormed(value)) entries.push(value);
    else {
      const entry = EntrySchema.safeParse(value);
      if (entry.success) entries.push(entry.data);
    }
  }
  return { header: header.data, entries };
}

const isCount = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0;

/** An entry exactly as the index writes it (EntrySchema decides every other case). */
function isWellFormed(value: unknown): value is CatalogEntry {
  const entry = value as Partial<Record<keyof CatalogEntry, unknown>> | null;
  if (typeof entry !== 'object' || entry === null) return false;
  const { key, id, images, task_id: taskId, attempts, credits_cost: credits, made_by, used_by } = entry;
  if (typeof key !== 'string' || typeof id !== 'string' || typeof made_by !== 'string') return false;
  if (typeof used_by !== 'string' || !(taskId === null || typeof taskId === 'string')) return false;
  if (!isCount(attempts) || typeof credits !== 'number' || !(credits >= 0)) return false;
  if (entry.expires_at !== undefined && typeof entry.expires_at !== 'number') return false;
  if (Object.keys(entry).some((field) => !ENTRY_FIELDS.has(field))) return false;
  return (
    Array.isArray(images) &&
    images.length > 0 &&
    images.every(
      (image: { path?: unknown; sha256?: unknown; bytes?: unknown; source_url?: unknown } | null) =>
        typeof image === 'object' &&
        image !== null &&
        typeof image.path === 'string' &&
        typeof image.sha256 === 'string' &&
        isCount(image.bytes) &&
        typeof image.source_url === 'string' &&
        Object.keys(image).length === 4, // an image with check facts goes through ImageSchema
    )
  );
}

const ENTRY_FIELDS: ReadonlySet<string> = new Set(Object.keys(EntrySchema.shape));

export function* catalogIndexLines(index: CatalogIndex): Generator<string> {
  yield `${JSON.stringify(index.header)}\n`;
  for (const entry of index.entries) yield `${JSON.stringify(entry)}\n`;
}

export function catalogHeader(fields: Omit<CatalogHeader, 'format'>): CatalogHeader {
  return { format: FORMAT, ...fields };
}
