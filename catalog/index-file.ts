// The catalog index: what an output holds, by generation key. One JSON-lines file in the run's
// state (`<output>/.pixelmill/catalog.jsonl`, or that object under an S3 output's prefix): a
// header line naming the catalog and the run that wrote it last, then one line per stored result.
// Every run rewrites it when its report is written; the next run of the catalog reads it to carry
// over what did not change. It is a guide, not the truth: what is really stored is checked.
import { z } from 'zod';
// Not runstate/index.js: `plan` reads the index of a local output without loading the S3 client.
import { parsedLine } from '../runstate/files.js';
import { ImageRecordSchema } from '../runstate/outcomes.js';

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
  const reader = new IndexReader();
  let start = 0;
  while (start < text.length && !reader.refused) {
    const end = text.indexOf('\n', start);
    reader.add(text.slice(start, end === -1 ? text.length : end));
    start = end === -1 ? text.length : end + 1;
  }
  return reader.index();
}

/**
 * The index read from its lines as they come (runstate's readCatalogIndexLines), never the whole
 * text at once: a 300,000-output index is 130 MB of text beside its parsed entries. Stops
 * reading at a header that is not one.
 */
export async function readCatalogIndex(batches: AsyncIterable<string[]>): Promise<CatalogIndex | undefined> {
  const reader = new IndexReader();
  for await (const lines of batches) {
    for (const line of lines) reader.add(line);
    if (reader.refused) break;
  }
  return reader.index();
}

/** Takes an index's lines one at a time: its header first, then its entries. */
class IndexReader {
  #header: CatalogHeader | undefined;
  readonly #entries: CatalogEntry[] = [];
  /** The first value was not a header: the file is not an index. */
  refused = false;

  add(line: string): void {
    // A blank, torn or garbled line is skipped (runstate/files.ts).
    const value = parsedLine(line);
    if (value === undefined || this.refused) return;
    if (this.#header === undefined) {
      const header = HeaderSchema.safeParse(value);
      if (header.success) this.#header = header.data;
      else this.refused = true;
      return;
    }
    // A damaged line loses its entry, not the index: that item is generated again. The usual
    // line is checked by hand (zod's parse of 100,000 entries was a tenth of a big plan's time).
    const entry = isWellFormed(value) ? value : EntrySchema.safeParse(value).data;
    if (entry === undefined) return;
    // A few runs made every result: one copy of each name, not one per entry (30 MB at 300,000).
    entry.made_by = this.#run(entry.made_by);
    entry.used_by = this.#run(entry.used_by);
    this.#entries.push(entry);
  }

  readonly #runs = new Map<string, string>();

  #run(name: string): string {
    const known = this.#runs.get(name);
    if (known !== undefined) return known;
    this.#runs.set(name, name);
    return name;
  }

  index(): CatalogIndex | undefined {
    return this.#header && { header: this.#header, entries: this.#entries };
  }
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
