// Run state in an object store, under `<output prefix>/.pixelmill/` of an S3 output, so that workers
// on any machine share it with nothing but the store's credentials. The same contract as the local
// files (local.ts), laid out for a store without appends or renames:
// - the plan: `plan-<hash16>/items-NNNNNN.jsonl` (SHARD_SIZE items each, so a shard reads one
//   object), then `plan-<hash16>.json`, its meta, written last: its presence means complete;
// - outcomes: one object per append, `outcomes-<hash16>/shard-NNNN/<sequence>.jsonl`, read in
//   sequence order (the last line for an item wins, as in a file);
// - the submit journal: one object per line, `submits/<workflow id>/<run id>/<activity id>.task.json`
//   (and `.task.takeover-<attempt>.json`), created only if absent, so a line is never replaced.
import { SHARD_SIZE } from '../common/names.js';
import type { PlanRef } from '../common/types.js';
import type { LoadedManifest } from '../manifest/load.js';
import type { PlannedItem } from '../manifest/normalize.js';
import { S3Objects } from '../storage/s3-objects.js';
import type { S3ConnectionOptions } from '../storage/s3-connection.js';
import { s3UrlOf, type S3Location } from '../storage/s3-location.js';
import { parseJsonLines } from './files.js';
import { validOutcomeLines, type OutcomeLine } from './outcomes.js';
import {
  planContent,
  planIndexOutOfRange,
  planMissing,
  STATE_DIR_NAME,
  type IncrementalPlan,
  type LoadedPlan,
  type PlanMeta,
} from './plan.js';
import { PlanCache, PromiseCache } from './plan-cache.js';
import {
  CATALOG_INDEX_FILE,
  PLAN_META_NAME,
  type ItemRange,
  type JournalCall,
  type RunStateStore,
  type StateLocation,
} from './store.js';
import type { JournalLine } from './submit-journal.js';

/** Plan parts written at once: a million-item plan is 2,000 objects. */
const PARALLEL_PART_WRITES = 8;
/** Plan parts kept parsed per process: 64 x SHARD_SIZE items, a few MB. */
const PART_CACHE_SIZE = 64;
/** Outcome objects kept parsed per process: a few running shards' worth (tens of MB at most). */
const OUTCOME_OBJECTS_CACHED = 2_048;

const stem = (ref: PlanRef): string => ref.planHash.slice(0, 16);
const pad = (value: number, width: number): string => String(value).padStart(width, '0');
const itemsPath = (ref: PlanRef, part: number): string => `plan-${stem(ref)}/items-${pad(part, 6)}.jsonl`;
const metaPath = (ref: PlanRef): string => `plan-${stem(ref)}.json`;
const outcomesPrefix = (ref: PlanRef, shard: number): string =>
  `outcomes-${stem(ref)}/shard-${pad(shard + 1, 4)}/`;
const journalPrefix = (workflowId: string): string => `submits/${encodeURIComponent(workflowId)}/`;
const toJsonLines = (values: readonly unknown[]): string =>
  values.map((value) => `${JSON.stringify(value)}\n`).join('');

export class S3RunStateStore implements RunStateStore {
  readonly #objects = new Map<string, S3Objects>();
  readonly #plans: PlanCache;
  /** Plan parts read: a worker's shards read theirs once. */
  readonly #parts = new PromiseCache<PlannedItem[]>(PART_CACHE_SIZE);
  /** Outcome objects read, by path and ETag. */
  readonly #outcomeObjects = new PromiseCache<OutcomeLine[]>(OUTCOME_OBJECTS_CACHED);

  constructor(private readonly connection: S3ConnectionOptions = {}) {
    this.#plans = new PlanCache(
      (ref) => this.#readWholePlan(ref),
      (ref) => this.#readMeta(ref),
      2,
    );
  }

  /**
   * Objects of an S3 output, under its state folder (or `under` another folder of the output, ''
   * for the output itself): one client per location, kept for the process.
   */
  objectsOf(output: S3Location, options: { under?: string } = {}): S3Objects {
    const under = options.under ?? STATE_DIR_NAME;
    const location =
      under === ''
        ? output
        : { ...output, prefix: output.prefix === '' ? under : `${output.prefix}/${under}` };
    const key = JSON.stringify(location);
    let objects = this.#objects.get(key);
    if (objects === undefined) {
      objects = new S3Objects({ ...this.connection, location, label: s3UrlOf(output) });
      this.#objects.set(key, objects);
    }
    return objects;
  }

  #store(ref: StateLocation): S3Objects {
    if (!ref.objectStore) throw new Error(`S3RunStateStore given a local plan (${ref.stateDir})`);
    return this.objectsOf(ref.objectStore);
  }

  async writePlan(
    manifest: LoadedManifest,
    incremental?: IncrementalPlan,
  ): Promise<{ ref: PlanRef; meta: PlanMeta }> {
    const output = manifest.settings.objectStore;
    if (!output) throw new Error('S3RunStateStore given a manifest with a local output');
    const objects = this.objectsOf(output);
    const { hash, items: planned, meta } = planContent(manifest, incremental);
    const ref: PlanRef = {
      stateDir: `${s3UrlOf(output)}/${STATE_DIR_NAME}`,
      planHash: hash,
      objectStore: output,
    };
    const existing = await objects.read(metaPath(ref));
    if (existing !== undefined) {
      const existingMeta = parseMeta(ref, existing);
      if (existingMeta.hash === hash) return { ref, meta: existingMeta };
    }
    const parts = Math.ceil(planned.length / SHARD_SIZE);
    let next = 0;
    const writer = async (): Promise<void> => {
      for (let part = next++; part < parts; part = next++) {
        const items = planned.slice(part * SHARD_SIZE, (part + 1) * SHARD_SIZE);
        await objects.write(itemsPath(ref, part), toJsonLines(items), {
          contentType: 'application/x-ndjson',
        });
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL_PART_WRITES, parts) }, writer));
    await objects.write(metaPath(ref), `${JSON.stringify(meta, null, 2)}\n`);
    return { ref, meta };
  }

  readPlanMeta(ref: PlanRef): Promise<PlanMeta> {
    return this.#plans.meta(ref);
  }

  readPlan(ref: PlanRef): Promise<LoadedPlan> {
    return this.#plans.get(ref);
  }

  async readPlanItems(ref: PlanRef, range: ItemRange): Promise<{ meta: PlanMeta; items: PlannedItem[] }> {
    const meta = await this.readPlanMeta(ref);
    const end = Math.min(range.offset + range.count, meta.itemCount);
    const items: PlannedItem[] = [];
    for (let part = Math.floor(range.offset / SHARD_SIZE); part * SHARD_SIZE < end; part++) {
      const partItems = await this.#part(ref, meta, part);
      const from = Math.max(range.offset - part * SHARD_SIZE, 0);
      items.push(...partItems.slice(from, end - part * SHARD_SIZE));
    }
    return { meta, items };
  }

  async readPlanItem(ref: PlanRef, index: number): Promise<{ meta: PlanMeta; item: PlannedItem }> {
    const meta = await this.readPlanMeta(ref);
    const part = Math.floor(index / SHARD_SIZE);
    const item =
      index >= 0 && index < meta.itemCount
        ? (await this.#part(ref, meta, part))[index - part * SHARD_SIZE]
        : undefined;
    if (item === undefined) throw planIndexOutOfRange(index, meta.itemCount);
    return { meta, item };
  }

  async appendOutcomes(
    ref: PlanRef,
    shard: number,
    lines: readonly OutcomeLine[],
    sequence?: string,
  ): Promise<void> {
    if (lines.length === 0) return;
    const name = sequence ?? `${pad(Date.now(), 15)}-${Math.random().toString(36).slice(2, 10)}`;
    await this.#store(ref).write(`${outcomesPrefix(ref, shard)}${name}.jsonl`, toJsonLines(lines), {
      contentType: 'application/x-ndjson',
    });
  }

  async readOutcomes(ref: PlanRef, shard?: number, indices?: ReadonlySet<number>): Promise<OutcomeLine[]> {
    const objects = this.#store(ref);
    const prefix = shard === undefined ? `outcomes-${stem(ref)}/` : outcomesPrefix(ref, shard);
    const lines: OutcomeLine[] = [];
    const entries = (await objects.listEntries(prefix)).sort((a, b) => (a.path < b.path ? -1 : 1));
    // A shard's store activities each read its outcomes: objects already read (same ETag) are not
    // read again, so a shard costs one listing per batch rather than every object per batch.
    for (const entry of entries) {
      const key = `${ref.stateDir}\0${entry.path}\0${entry.etag}\0${entry.size}`;
      const objectLines = await this.#outcomeObjects.get(key, () =>
        this.#readOutcomeObject(objects, entry.path),
      );
      for (const line of objectLines) if (!indices || indices.has(line.index)) lines.push(line);
    }
    return lines;
  }

  async #readOutcomeObject(objects: S3Objects, path: string): Promise<OutcomeLine[]> {
    return validOutcomeLines(parseJsonLines((await objects.read(path)) ?? ''));
  }

  async latestOutcomes(ref: PlanRef, items: readonly { id: string }[]): Promise<(OutcomeLine | undefined)[]> {
    const latest = new Array<OutcomeLine | undefined>(items.length);
    for (const line of await this.readOutcomes(ref)) {
      if (items[line.index]?.id === line.id) latest[line.index] = line;
    }
    return latest;
  }

  async journalSubmit(ref: PlanRef, workflowId: string, line: JournalLine): Promise<void> {
    // `<activity>.task.json`, then `<activity>.task.takeover-<attempt>.json`: listed in that order.
    const kind =
      line.taken_over_at_attempt === undefined ? 'task' : `task.takeover-${line.taken_over_at_attempt}`;
    const path = `${journalPrefix(workflowId)}${encodeURIComponent(line.run)}/${encodeURIComponent(line.activity)}.${kind}.json`;
    await this.#store(ref).write(path, `${JSON.stringify(line)}\n`, { ifAbsent: true });
  }

  async readJournal(ref: PlanRef, workflowId: string, call?: JournalCall): Promise<Partial<JournalLine>[]> {
    const objects = this.#store(ref);
    // An item's call is `<activity>/<index>`, whose encoded name goes on with %2F.
    const prefix = call
      ? `${journalPrefix(workflowId)}${encodeURIComponent(call.run)}/${encodeURIComponent(call.activity)}${call.items ? '%2F' : '.'}`
      : journalPrefix(workflowId);
    const lines: Partial<JournalLine>[] = [];
    for (const path of await objects.list(prefix)) {
      for (const value of parseJsonLines((await objects.read(path)) ?? '')) {
        if (typeof value === 'object' && value !== null) lines.push(value as Partial<JournalLine>);
      }
    }
    return lines;
  }

  async listPlans(state: StateLocation): Promise<PlanRef[]> {
    const objects = this.#store(state);
    const metas = (await objects.listEntries('plan-')).filter((entry) => PLAN_META_NAME.test(entry.path));
    const plans = await Promise.all(
      metas.map(async (entry) => {
        const meta = JSON.parse((await objects.read(entry.path)) ?? '{}') as PlanMeta;
        return { ref: { ...state, planHash: meta.hash }, at: entry.modifiedMs };
      }),
    );
    return plans.sort((a, b) => b.at - a.at).map((plan) => plan.ref);
  }

  readCatalogIndex(state: StateLocation): Promise<string | undefined> {
    return this.#store(state).read(CATALOG_INDEX_FILE);
  }

  /** Read whole, then split: the object store client reads an object as one text. */
  async readCatalogIndexLines(state: StateLocation): Promise<AsyncIterable<string[]> | undefined> {
    const text = await this.readCatalogIndex(state);
    return text === undefined ? undefined : oneBatch(text.split('\n'));
  }

  async writeCatalogIndex(state: StateLocation, lines: Iterable<string>): Promise<void> {
    await this.#store(state).write(CATALOG_INDEX_FILE, [...lines].join(''), {
      contentType: 'application/x-ndjson',
    });
  }

  /** Closes the store clients' connections. */
  close(): void {
    for (const objects of this.#objects.values()) objects.close();
    this.#objects.clear();
  }

  async #readMeta(ref: PlanRef): Promise<PlanMeta> {
    const text = await this.#store(ref).read(metaPath(ref));
    if (text === undefined) throw planMissing(ref, 'there is no plan object');
    return parseMeta(ref, text);
  }

  #part(ref: PlanRef, meta: PlanMeta, part: number): Promise<PlannedItem[]> {
    return this.#parts.get(`${ref.stateDir}\0${ref.planHash}\0${part}`, () =>
      this.#readPart(ref, meta, part),
    );
  }

  async #readPart(ref: PlanRef, meta: PlanMeta, part: number): Promise<PlannedItem[]> {
    const text = await this.#store(ref).read(itemsPath(ref, part));
    if (text === undefined) throw planMissing(ref, `its items ${part * SHARD_SIZE}.. are missing`);
    const items = [...parseJsonLines(text)] as PlannedItem[];
    const expected = Math.min(SHARD_SIZE, meta.itemCount - part * SHARD_SIZE);
    if (items.length !== expected)
      throw planMissing(ref, `items-${pad(part, 6)} holds ${items.length} items, not ${expected}`);
    return items;
  }

  async #readWholePlan(ref: PlanRef): Promise<LoadedPlan> {
    const meta = await this.readPlanMeta(ref);
    if (meta.hash !== ref.planHash) throw planMissing(ref, 'it belongs to another manifest hash');
    const { items } = await this.readPlanItems(ref, { offset: 0, count: meta.itemCount });
    return { meta, items };
  }
}

function parseMeta(ref: PlanRef, text: string): PlanMeta {
  try {
    return JSON.parse(text) as PlanMeta;
  } catch {
    throw planMissing(ref, 'its meta object is not JSON');
  }
}

async function* oneBatch<T>(values: T[]): AsyncGenerator<T[]> {
  yield values;
}
