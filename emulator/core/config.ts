// Provider-neutral config plumbing for the provider emulators: parse -> normalize -> validate,
// every problem collected, each as `path: message`, or `file:line:col path: message` for a YAML
// file (positions walked back from the problem's path).
//
// A provider supplies its defaults and a zod schema; the schema should be strict so that a typo
// is an error rather than a silently ignored key. Keys under `secretParents` (e.g. `accounts`)
// are never named in a problem: a key pasted where a field name belongs must not reach a terminal.
import { readFileSync } from 'node:fs';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { z } from 'zod';
import { UserError } from '../../common/errors.js';
import { formatPath } from '../../common/problems.js';
import { plural } from '../../common/words.js';

export const CONFIG_ROOT = '(root)';

/** A problem found in a config: `path` is the location in the object, e.g. `['accounts', 0, 'id']`. */
export interface ConfigProblem {
  path: readonly PropertyKey[];
  message: string;
  /** For an unknown key: the path to the key itself, which `path` leaves out under a secret parent. */
  unknownKeyAt?: readonly PropertyKey[];
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Deep merge of plain objects; arrays, scalars and null in `override` replace. */
export function mergeOverDefaults(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return override;
  const merged: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(override)) merged[key] = mergeOverDefaults(base[key], value);
  return merged;
}

/** A share in [0, 1]. */
export const rate = z.number().min(0).max(1);

/** `[min, max]` emulated seconds; a single number means `[n, n]`. */
export const secondsRange = z.preprocess(
  (value) => (typeof value === 'number' ? [value, value] : value),
  z
    .tuple([z.number().min(0), z.number().min(0)])
    .refine(([min, max]) => min <= max, 'the first value (min) must not exceed the second (max)'),
);

type DeepPartial<T> = T extends readonly unknown[]
  ? Readonly<T>
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> }
    : T;
/** What `start<Provider>Emulator({ config })` accepts: any subset, merged over the defaults (arrays replace). */
export type ConfigOverrides<T> = DeepPartial<T>;

/** Frozen all the way down: defaults are shared by every emulator and must not drift. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

export interface ConfigSpec<T> {
  /**
   * Names the emulator in messages and error codes, e.g. `fal` (`fal_emulator_config_invalid`,
   * "invalid fal emulator config"). The first API's emulator leaves it out: its codes and words
   * came first and stay as they are (`emulator_config_invalid`, "invalid emulator config").
   */
  provider?: string;
  defaults: T;
  schema: z.ZodType<T, unknown>;
  /** Top-level keys whose unknown sub-keys are not named (they may be secrets). */
  secretParents?: readonly string[];
  /** Checks the schema cannot express (duplicates across a list); run on the merged input. */
  extraProblems?: (input: unknown) => ConfigProblem[];
}

/** Validates an already merged config, returning every problem rather than the first. */
export function validateConfig<T>(
  spec: ConfigSpec<T>,
  input: unknown,
): { config?: T; problems: ConfigProblem[] } {
  const problems = spec.extraProblems?.(input) ?? [];
  const result = spec.schema.safeParse(input);
  if (result.success) return problems.length === 0 ? { config: result.data, problems } : { problems };
  for (const issue of result.error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) {
        const at = [...issue.path, key];
        if (spec.secretParents?.includes(String(issue.path[0])))
          problems.push({
            path: issue.path,
            message: 'unknown key (its name is not shown: it may be a secret)',
            unknownKeyAt: at,
          });
        else problems.push({ path: at, message: 'unknown key', unknownKeyAt: at });
      }
    } else if (issue.code === 'invalid_key') {
      // A record key failed its own schema: say why, not only "Invalid key in record".
      problems.push({ path: issue.path, message: issue.issues[0]?.message ?? issue.message });
    } else {
      problems.push({ path: issue.path, message: issue.message });
    }
  }
  return { problems };
}

/** The emulator as codes (`fal_emulator`) and messages (`fal emulator`) name it. */
function named(spec: ConfigSpec<unknown>): { code: string; words: string } {
  return spec.provider === undefined
    ? { code: 'emulator', words: 'emulator' }
    : { code: `${spec.provider}_emulator`, words: `${spec.provider} emulator` };
}

function invalid(spec: ConfigSpec<unknown>, where: string, problems: readonly string[]): UserError {
  const { code, words } = named(spec);
  return new UserError(
    `${code}_config_invalid`,
    `invalid ${words} config${where} (${plural(problems.length, 'problem')})`,
    problems,
  );
}

/** For config objects (tests, benchmarks): merged over the defaults, then validated. */
export function parseConfig<T>(spec: ConfigSpec<T>, overrides: unknown): T {
  const { config, problems } = validateConfig(spec, mergeOverDefaults(spec.defaults, overrides ?? {}));
  if (config) return config;
  throw invalid(
    spec as ConfigSpec<unknown>,
    '',
    problems.map((p) => `${formatPath(p.path, CONFIG_ROOT)}: ${p.message}`),
  );
}

export function loadConfigFile<T>(spec: ConfigSpec<T>, file: string): T {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    const { code, words } = named(spec as ConfigSpec<unknown>);
    throw new UserError(`${code}_config_unreadable`, `cannot read ${words} config ${file}: ${reason}`);
  }
  return parseConfigText(spec, text, file);
}

/** Parses YAML text; `file` only names the source in problems. */
export function parseConfigText<T>(spec: ConfigSpec<T>, text: string, file: string): T {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const problems: { offset: number; text: string }[] = [];
  const at = (offset: number): string => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };
  for (const error of doc.errors) {
    const gist = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    problems.push({ offset: error.pos[0], text: `${at(error.pos[0])} ${gist}` });
  }
  // A document with syntax errors still yields a value: report schema problems in the same run.
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push({ offset: 0, text: `${at(0)} ${CONFIG_ROOT}: expected a mapping of settings` });
  } else {
    const { config, problems: found } = validateConfig(spec, mergeOverDefaults(spec.defaults, raw));
    if (config && problems.length === 0) return config;
    for (const problem of found) {
      const offset = offsetOf(doc, problem.unknownKeyAt ?? problem.path, problem.unknownKeyAt !== undefined);
      problems.push({
        offset,
        text: `${at(offset)} ${formatPath(problem.path, CONFIG_ROOT)}: ${problem.message}`,
      });
    }
  }
  problems.sort((a, b) => a.offset - b.offset);
  throw invalid(
    spec as ConfigSpec<unknown>,
    ` ${file}`,
    problems.map((p) => p.text),
  );
}

/** How an emulator's config is read: what each emulator's config module exports under its own names. */
export interface ConfigLoaders<T> {
  /** For config objects (tests, benchmarks): merged over the defaults, then validated. */
  parse(overrides: unknown): T;
  /** Reads a YAML config file; every problem is reported as `file:line:col path: message`. */
  load(file: string): T;
  /** Parses YAML text; `file` only names the source in problems. */
  parseText(text: string, file: string): T;
}

/** The three readers of one emulator's config, each throwing one UserError that lists every problem. */
export function configLoaders<T>(spec: ConfigSpec<T>): ConfigLoaders<T> {
  return {
    parse: (overrides) => parseConfig(spec, overrides),
    load: (file) => loadConfigFile(spec, file),
    parseText: (text, file) => parseConfigText(spec, text, file),
  };
}

/** Source offset of the node at `path`, or of its nearest existing ancestor. */
function offsetOf(doc: Document, path: readonly PropertyKey[], wantKey: boolean): number {
  let node: unknown = doc.contents;
  let offset = (doc.contents as Node | null)?.range?.[0] ?? 0;
  for (let i = 0; i < path.length; i++) {
    const part = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find(
        (item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(part),
      );
      if (!pair) return offset;
      const keyNode = pair.key as Node;
      const valueNode = pair.value as Node | null;
      if (last && (wantKey || !valueNode?.range)) return keyNode.range?.[0] ?? offset;
      offset = valueNode?.range?.[0] ?? keyNode.range?.[0] ?? offset;
      node = valueNode;
    } else if (isSeq(node) && typeof part === 'number') {
      const item = node.items[part] as Node | undefined;
      if (!item?.range) return offset;
      offset = item.range[0];
      node = item;
    } else {
      return offset;
    }
  }
  return offset;
}
