// Reading an emulator config file: YAML text in, a validated config out, or one UserError that
// lists every problem (syntax and schema alike) as `file:line:col path: message`.
//
// Positions come from the `yaml` document: each problem's object path is walked back to the node
// that caused it (the key itself for an unknown key, the value otherwise, or the nearest ancestor
// that exists when the value is missing).
import { readFileSync } from 'node:fs';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { UserError } from '../../common/errors.js';
import { formatPath } from '../../common/problems.js';
import { plural } from '../../common/words.js';
import {
  CONFIG_ROOT,
  DEFAULT_EMULATOR_CONFIG,
  validateEmulatorConfig,
  type EmulatorConfig,
} from './config.js';
import { mergeOverDefaults } from '../core/config.js';

export function loadEmulatorConfig(file: string): EmulatorConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (error as Error).message;
    throw new UserError('emulator_config_unreadable', `cannot read emulator config ${file}: ${reason}`);
  }
  return parseEmulatorConfigText(text, file);
}

/** Parses YAML text; `file` only names the source in problems. */
export function parseEmulatorConfigText(text: string, file: string): EmulatorConfig {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  const problems: { offset: number; text: string }[] = [];
  const at = (offset: number): string => {
    const { line, col } = lineCounter.linePos(offset);
    return `${file}:${line}:${col}`;
  };

  for (const error of doc.errors) {
    // yaml's message repeats the position and quotes the source over several lines; keep the gist.
    const gist = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    problems.push({ offset: error.pos[0], text: `${at(error.pos[0])} ${gist}` });
  }

  // Even a document with syntax errors yields a best-effort value, so schema problems elsewhere
  // in the file are reported in the same run instead of one fix-and-retry cycle per problem.
  const raw: unknown = doc.toJS() ?? {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    problems.push({ offset: 0, text: `${at(0)} ${CONFIG_ROOT}: expected a mapping of settings` });
  } else {
    const { config, problems: schemaProblems } = validateEmulatorConfig(
      mergeOverDefaults(DEFAULT_EMULATOR_CONFIG, raw),
    );
    if (config && problems.length === 0) return config;
    for (const problem of schemaProblems) {
      const { unknownKeyAt } = problem;
      const offset = offsetOf(doc, unknownKeyAt ?? problem.path, unknownKeyAt !== undefined);
      problems.push({
        offset,
        text: `${at(offset)} ${formatPath(problem.path, CONFIG_ROOT)}: ${problem.message}`,
      });
    }
  }
  problems.sort((a, b) => a.offset - b.offset);
  throw new UserError(
    'emulator_config_invalid',
    `invalid emulator config ${file} (${plural(problems.length, 'problem')})`,
    problems.map((p) => p.text),
  );
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
