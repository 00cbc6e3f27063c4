// Loads a manifest (and its items_file): parse -> validate -> normalize. Problems are collected,
// never thrown one at a time, so `pixelmill validate` shows everything a person has to fix.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, extname, relative, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { UserError } from '../common/errors.js';
import { readCsvRows, readJsonlRows, type ItemRows } from './items-file.js';
import { systemFolder } from './output-folder.js';
import { unwritablePath } from './result-paths.js';
import { planItem, runSettings, type PlannedItem, type RunSettings } from './normalize.js';
import { formatPath } from '../common/problems.js';
import { plural } from '../common/words.js';
import {
  locate,
  MANIFEST_ROOT,
  sortProblems,
  yamlErrorOffset,
  zodProblems,
  type PathSegment,
  type Where,
} from './problems.js';
import { providerNamed } from '../providers/registry.js';
import { ReferenceFiles, type LocalReference } from './references.js';
import { ItemSchema, ManifestSchema, type ManifestItem } from './schema.js';

/** Inline items belong in a file of readable size; large catalogs use items_file. */
/**
 * A manifest with its items inline is parsed whole, with every position kept for messages (about
 * 1.5 KB of memory per item): bigger catalogs belong in an items_file, which is read row by row.
 */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** Items in one run: validation holds them all (about 1.5 GB at this size, measured in BENCHMARKS.md). */
export const MAX_ITEMS = 1_000_000;
export const MAX_ITEMS_FILE_BYTES = 512 * 1024 * 1024;

export interface LoadedManifest {
  settings: RunSettings;
  items: PlannedItem[];
  /** The local reference images its items name, each once: the CLI puts them in the run's store. */
  references: LocalReference[];
  /** sha256 of the manifest and items_file bytes: a run refuses to continue on a changed manifest. */
  hash: string;
}

interface SourceText {
  text: string;
  bytes: Buffer;
}

function displayName(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel && !rel.startsWith('..') ? rel : file;
}

function readSource(
  file: string,
  label: string,
  maxBytes: number,
  problems: string[],
  /** What to do about a file over the limit. */
  overLimitHint = '',
): SourceText | undefined {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) {
      problems.push(`${label}: not a file`);
      return undefined;
    }
    size = stat.size;
  } catch {
    problems.push(`${label}: file not found`);
    return undefined;
  }
  if (size > maxBytes) {
    problems.push(
      `${label}: file is ${(size / 1048576).toFixed(1)} MiB, over the ${maxBytes / 1048576} MiB limit${overLimitHint}`,
    );
    return undefined;
  }
  const bytes = readFileSync(file);
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(bytes), bytes };
  } catch {
    const lenient = bytes.toString('utf8');
    const before = lenient.slice(0, Math.max(0, lenient.indexOf('\uFFFD')));
    const line = before.split('\n').length;
    const col = before.length - before.lastIndexOf('\n');
    problems.push(`${label}:${line}:${col} the file is not valid UTF-8 text`);
    return undefined;
  }
}

function readItemsFile(file: string, problems: string[]): (ItemRows & { bytes: Buffer }) | undefined {
  const label = displayName(file);
  const kind = extname(file).toLowerCase();
  if (kind !== '.csv' && kind !== '.jsonl' && kind !== '.ndjson') {
    problems.push(`${label}: items_file must end in .csv or .jsonl`);
    return undefined;
  }
  const source = readSource(file, label, MAX_ITEMS_FILE_BYTES, problems);
  if (!source) return undefined;
  const read = kind === '.csv' ? readCsvRows(source.text, MAX_ITEMS) : readJsonlRows(source.text, MAX_ITEMS);
  return { ...read, bytes: source.bytes };
}

/** Validates and normalizes a manifest file; throws a UserError listing every problem. */
export function loadManifest(manifestPath: string): LoadedManifest {
  const file = resolve(manifestPath);
  const label = displayName(file);
  const problems: string[] = [];
  /** The files problems are in, in the order they are listed: the manifest, then its items_file. */
  const files = [label];
  const fail = (): never => {
    const count = plural(problems.length, 'problem');
    throw new UserError('manifest_invalid', `${label}: ${count}`, sortProblems(problems, files));
  };

  const source = readSource(
    file,
    label,
    MAX_MANIFEST_BYTES,
    problems,
    ': put a big catalog in an items_file (CSV or JSONL), which has no such limit',
  );
  if (!source) return fail();
  const lineCounter = new LineCounter();
  const doc = parseDocument(source.text, { lineCounter, uniqueKeys: true });
  for (const error of [...doc.errors, ...doc.warnings]) {
    const { line, col } = lineCounter.linePos(yamlErrorOffset(doc, error));
    // The yaml library appends " at line L, column C:" and a code excerpt: the prefix says it.
    const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    problems.push(`${label}:${line}:${col} ${message}`);
  }
  if (problems.length) return fail();

  const where: Where = (path, options) => {
    const { line, col } = locate(doc, lineCounter, path, options);
    return `${label}:${line}:${col}`;
  };
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    // Unresolved aliases and alias bombs surface only here, without a position.
    problems.push(`${label}: ${error instanceof Error ? error.message : String(error)}`);
    return fail();
  }
  const parsed = ManifestSchema.safeParse(data, { reportInput: true });
  if (!parsed.success) {
    problems.push(...zodProblems(parsed.error.issues, ManifestSchema, where));
    return fail();
  }
  const manifest = parsed.data;
  const manifestDir = dirname(file);
  const hash = createHash('sha256').update(source.bytes);

  // Each item with the place it was written, for duplicate-id messages.
  // `referenceAt(k)`: where its image_urls entry k was written.
  /** Where the default of an item's field was written, when the item takes it from `defaults`. */
  const defaultAt = (item: ManifestItem, path: readonly PathSegment[]): string | undefined => {
    // `params` merge key by key (normalize.ts): a params key is the item's only if it sets that key.
    const depth = path[0] === 'params' && path.length > 1 ? 2 : 1;
    const has = (fields: object | undefined, at: readonly PathSegment[]): boolean =>
      at.reduce<unknown>(
        (node, key) =>
          node !== null && typeof node === 'object' && Object.hasOwn(node, key)
            ? (node as Record<PropertyKey, unknown>)[key]
            : undefined,
        fields,
      ) !== undefined;
    const key = path.slice(0, depth);
    if (key.length < depth || has(item, key) || !has(manifest.defaults, key)) return undefined;
    return `${where(['defaults', ...path])} ${formatPath(['defaults', ...path], MANIFEST_ROOT)}`;
  };
  // `fieldAt(path)`: where a field of the item was written (or its default, when it has none).
  const entries: {
    item: ManifestItem;
    where: string;
    referenceAt: (k: number) => string;
    fieldAt: (path: readonly PathSegment[]) => string;
  }[] = (manifest.items ?? []).map((item, index) => ({
    item,
    where: `${where(['items', index])} items[${index}]`,
    referenceAt: (k) => `${where(['items', index, 'image_urls', k])} items[${index}].image_urls[${k}]`,
    fieldAt: (path) =>
      defaultAt(item, path) ??
      `${where(['items', index, ...path])} ${formatPath(['items', index, ...path], MANIFEST_ROOT)}`,
  }));
  if (manifest.items_file) {
    const itemsFile = resolve(manifestDir, manifest.items_file);
    const itemsLabel = displayName(itemsFile);
    files.push(itemsLabel);
    const read = readItemsFile(itemsFile, problems);
    const tooMany = read?.rows.at(-1);
    if (tooMany?.overLimit) {
      problems.push(`${itemsLabel}:${tooMany.line}:1 ${tooMany.problem}`);
      return fail();
    }
    if (read) {
      hash.update(read.bytes);
      for (const { line, col, problem } of read.fileProblems)
        problems.push(`${itemsLabel}:${line}:${col ?? 1} ${problem}`);
      // A column the header lacks is said once above, not again for every row.
      const absent = new Set<PropertyKey>(read.absentFields);
      read.rows.forEach((row, index) => {
        const at = `${itemsLabel}:${row.line}:${row.col ?? 1}`;
        if (row.problem) return problems.push(`${at} ${row.problem}`);
        const item = ItemSchema.safeParse(row.value, { reportInput: true });
        if (!item.success) {
          const issues = item.error.issues.filter((issue) => !absent.has(issue.path[0] ?? ''));
          return problems.push(
            ...zodProblems(issues, ItemSchema, () => at).map((p) => p.replace(' (top level)', ' row')),
          );
        }
        entries.push({
          item: item.data,
          where: `${at} row ${index + 1}`,
          referenceAt: (k) => `${at} row ${index + 1} image_urls[${k}]`,
          fieldAt: (path) =>
            defaultAt(item.data, path) ?? `${at} row ${index + 1} ${formatPath(path, MANIFEST_ROOT)}`,
        });
      });
    }
  }

  if (entries.length > MAX_ITEMS) {
    problems.push(
      `${label}: ${entries.length.toLocaleString('en-US')} items, over the limit of ${MAX_ITEMS.toLocaleString('en-US')}: split the catalog into several manifests`,
    );
    return fail();
  }
  const items: PlannedItem[] = [];
  const firstSeen = new Map<string, string>();
  const settings = runSettings(manifest, file, manifestDir);
  const system = systemFolder(settings.outputDir, homedir());
  if (system !== undefined) {
    const at =
      typeof manifest.output === 'object' ? ['output', 'dir'] : manifest.output ? ['output'] : ['name'];
    problems.push(`${where(at)} ${formatPath(['output'], MANIFEST_ROOT)}: ${system}`);
  }
  const referenceFiles = new ReferenceFiles(manifestDir);
  const defaults =
    manifest.defaults &&
    withReferences(
      manifest.defaults,
      referenceFiles,
      problems,
      (k) => `${where(['defaults', 'image_urls', k])} defaults.image_urls[${k}]`,
    );
  if (manifest.defaults && !defaults) return fail();
  const provider = providerNamed(settings.provider);
  // A default the provider cannot take is said once, at the default, not for every item.
  const mappingProblems = new Set<string>();
  for (const entry of entries) {
    const item = withReferences(entry.item, referenceFiles, problems, entry.referenceAt);
    if (!item) continue;
    const planned = planItem(item, defaults, provider.defaultModel);
    const mapped = provider.mapRequest(planned);
    if ('problems' in mapped)
      for (const problem of mapped.problems)
        mappingProblems.add(`${entry.fieldAt(problem.path)}: ${problem.message}`);
    const unwritable = unwritablePath(settings.pathTemplate, settings.name, planned);
    if (unwritable !== undefined) problems.push(`${entry.where}: ${unwritable}`);
    const earlier = firstSeen.get(planned.id);
    if (earlier !== undefined) {
      const how = entry.item.id
        ? 'duplicate id'
        : 'same prompt and parameters as an earlier item, so the same derived id';
      problems.push(
        `${entry.where.split(' ')[0]} ${formatPath(['id'], MANIFEST_ROOT)}: ${how} "${planned.id}" (first at ${earlier})`,
      );
      continue;
    }
    firstSeen.set(planned.id, entry.where.split(' ')[0] ?? '');
    items.push(planned);
  }
  problems.push(...mappingProblems);
  if (problems.length) return fail();
  const references = [...referenceFiles.found.values()];
  // A photo replaced under the same name changes the run, as an edited prompt does.
  if (references.length > 0) hash.update(JSON.stringify(items.map((item) => item.image_urls ?? null)));
  return { settings, items, references, hash: hash.digest('hex') };
}

/** `params` with its image_urls' local files as reference URIs; undefined when one is unusable. */
function withReferences<T extends { image_urls?: string[] | undefined }>(
  params: T,
  files: ReferenceFiles,
  problems: string[],
  at: (k: number) => string,
): T | undefined {
  if (!params.image_urls?.length) return params;
  const imageUrls = files.resolve(params.image_urls, at, problems);
  return imageUrls && { ...params, image_urls: imageUrls };
}
