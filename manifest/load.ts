// Loads a manifest (and its items_file): parse -> validate -> normalize. Problems are collected,
// never thrown one at a time, so `pixelmill validate` shows everything a person has to fix.
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { dirname, resolve } from 'node:path';
import { LineCounter, parseDocument } from 'yaml';
import { UserError } from '../common/errors.js';
import { formatPath } from '../common/problems.js';
import { plural } from '../common/words.js';
import { providerNamed } from '../providers/registry.js';
import { expandItems, type Expansion } from './expand.js';
import { fileEntries, inlineEntries, MAX_ITEMS, readItemsFile } from './item-entries.js';
import { blockLayer, FIELD_PLACEHOLDERS, variantLayer } from './layers.js';
import { resolveApiMode, runSettings, type PlannedItem, type RunSettings } from './normalize.js';
import { systemFolder } from './output-folder.js';
import { locate, MANIFEST_ROOT, sortProblems, yamlErrorOffset, zodProblems, type Where } from './problems.js';
import { ReferenceFiles, type LocalReference } from './references.js';
import { ManifestSchema, type ItemParams, type Manifest } from './schema.js';
import { displayName, readSource } from './source-file.js';
import { compileTemplate } from './template.js';

export { MAX_ITEMS, MAX_ITEMS_FILE_BYTES } from './item-entries.js';

/**
 * A manifest with its items inline is parsed whole, with every position kept for messages (about
 * 1.5 KB of memory per item): bigger catalogs belong in an items_file, which is read row by row.
 */
export const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface LoadedManifest {
  settings: RunSettings;
  /** Every output: the items, or with `variants` each (item, variant) pair, in manifest order. */
  items: PlannedItem[];
  /** With `variants`: how many products, and each variant's outputs. */
  expansion?: Expansion;
  /** The local reference images its items name, each once: the CLI puts them in the run's store. */
  references: LocalReference[];
  /** sha256 of the manifest and items_file bytes: a run refuses to continue on a changed manifest. */
  hash: string;
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
  // With no template anywhere, every item needs its prompt: said at once, per row or at the header.
  const promptRequired =
    manifest.defaults?.prompt_template === undefined &&
    !manifest.variants?.some((variant) => variant.prompt_template !== undefined);
  const entries = inlineEntries(manifest.items ?? [], where);
  const variableNames = new Set(entries.flatMap((entry) => Object.keys(entry.item.variables ?? {})));
  if (manifest.items_file) {
    const itemsFile = resolve(manifestDir, manifest.items_file);
    const itemsLabel = displayName(itemsFile);
    files.push(itemsLabel);
    const read = readItemsFile(itemsFile, itemsLabel, problems, {
      named: namesUsed(manifest),
      promptFromTemplates: !promptRequired,
    });
    const tooMany = read?.rows.at(-1);
    if (tooMany?.overLimit) {
      problems.push(`${itemsLabel}:${tooMany.line}:1 ${tooMany.problem}`);
      return fail();
    }
    if (read) {
      hash.update(read.bytes);
      for (const name of read.variableNames ?? []) variableNames.add(name);
      for (const entry of fileEntries(read, itemsLabel, problems, promptRequired)) entries.push(entry);
    }
  }

  if (entries.length > MAX_ITEMS) {
    problems.push(
      `${label}: ${entries.length.toLocaleString('en-US')} items, over the limit of ${MAX_ITEMS.toLocaleString('en-US')}: split the catalog into several manifests`,
    );
    return fail();
  }
  const settings = runSettings(manifest, file, manifestDir);
  const system = systemFolder(settings.outputDir, homedir());
  if (system !== undefined) {
    const at =
      typeof manifest.output === 'object' ? ['output', 'dir'] : manifest.output ? ['output'] : ['name'];
    problems.push(`${where(at)} ${formatPath(['output'], MANIFEST_ROOT)}: ${system}`);
  }
  const referenceFiles = new ReferenceFiles(manifestDir);
  const selectable = new Set<string>([...FIELD_PLACEHOLDERS, ...variableNames]);
  const variantVariables = (manifest.variants ?? []).flatMap((variant) =>
    Object.keys(variant.variables ?? {}),
  );
  const known = new Set([...selectable, ...variantVariables, ...(manifest.variants ? ['variant'] : [])]);
  const context = { where, known, referenceFiles, problems };
  const defaults = manifest.defaults && blockLayer(manifest.defaults, ['defaults'], context);
  const variants = manifest.variants?.map((variant, k) => variantLayer(variant, k, selectable, context));
  const { items, expansion } = expandItems({
    entries,
    ...(defaults ? { defaults } : {}),
    ...(variants ? { variants } : {}),
    known,
    referenceFiles,
    provider: providerNamed(settings.provider),
    settings,
    promptRequired,
    problems,
  });
  if (problems.length) return fail();
  const references = [...referenceFiles.found.values()];
  // A photo replaced under the same name changes the run, as an edited prompt does.
  if (references.length > 0) hash.update(JSON.stringify(items.map((item) => item.image_urls ?? null)));
  resolveApiMode(settings, items.length, {
    pricing: manifest.pricing !== undefined,
    taskTimeout: manifest.limits?.task_timeout !== undefined,
  });
  return { settings, items, references, hash: hash.digest('hex'), ...(expansion ? { expansion } : {}) };
}

/** The names the manifest's own templates and `where` selections use: columns it means to read. */
function namesUsed(manifest: Manifest): Set<string> {
  const names = new Set<string>();
  const scan = (params: ItemParams | undefined): void => {
    for (const text of [params?.prompt_template, ...(params?.image_urls ?? [])]) {
      const compiled = text === undefined ? undefined : compileTemplate(text, { globBraces: true });
      if (compiled && 'names' in compiled) for (const name of compiled.names) names.add(name);
    }
  };
  scan(manifest.defaults);
  for (const item of manifest.items ?? []) scan(item);
  for (const variant of manifest.variants ?? []) {
    scan(variant);
    for (const column of Object.keys(variant.where ?? {})) names.add(column);
  }
  return names;
}
