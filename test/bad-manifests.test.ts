// The corpus of broken manifests (test/fixtures/bad-manifests, plus two generated here because
// of their size): each is answered by `pixelmill validate` with exit 1 and one clear line per
// problem that names the file and, where the parser knows it, line and column. Never a crash,
// never a stack trace, never a secret echoed back.
//
// A few cases run the built CLI end to end; the others call what `validate` does (loadManifest,
// then the CLI's own text for a UserError) in this process, from the same folder: a CLI process
// takes a second or two to start, which thirty cases paid for nothing the few do not check.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { userErrorText } from '../client/user-error-text.js';
import { isUserError } from '../common/errors.js';
import { loadManifest } from '../manifest/load.js';
import { CLI } from './support/cli.js';

const CORPUS = fileURLToPath(new URL('./fixtures/bad-manifests/', import.meta.url));

/** Manifest file -> what its problem line must say (after `<file>[:line:col] `). */
const EXPECTED: Record<string, RegExp> = {
  'alias.yaml': /^alias\.yaml: Unresolved alias/,
  'alias-bomb.yaml': /^alias-bomb\.yaml: Excessive alias count/,
  'bad-name.yaml': /^bad-name\.yaml:1:7 name: must be 1-80 characters/,
  'crlf.yaml': /^crlf\.yaml:3:13 items\[0\]\.prompt: must not be empty$/,
  // Where the quote opens, not the end of the file where the parser noticed.
  'csv.yaml': /^items\.csv:2:3 CSV syntax: Quote Not Closed: the quoted cell opened here/,
  // 300 rows under a misspelt header: one line, at the header cell, not two per row.
  'csv-header.yaml': /^csv-header\.csv:1:4 promt: unknown column \(did you mean "prompt"\?\)$/,
  'deadline-past.yaml':
    /^deadline-past\.yaml:2:21 limits\.deadline: is in the past \(2020-01-01T08:00:00\.000Z\)$/,
  'dup-column.yaml': /^dup-column\.csv:1:11 CSV header: column "id" appears twice \(columns 1 and 3\)$/,
  'proto-column.yaml': /^proto-column\.csv:1:11 CSV header: column 3 "__proto__" is not an item field$/,
  'dup.yaml': /^dup\.yaml:4:5 id: duplicate id "a" \(first at dup\.yaml:3:5\)$/,
  'empty.yaml': /^empty\.yaml:1:1 \(top level\): must be a mapping, not null$/,
  'huge-prompt.yaml': /^huge-prompt\.yaml:3:13 items\[0\]\.prompt: must be at most 32000 characters$/,
  'jsonl.yaml': /^items\.jsonl:2:1 JSON syntax: /,
  'key-in-manifest.yaml':
    /^key-in-manifest\.yaml:2:44 api\.api_key_env: must be the name of an environment variable/,
  'key-like-name.yaml':
    /^key-like-name\.yaml:2:44 api\.api_key_env: looks like an API key, not the name of a variable/,
  'key-upper.yaml':
    /^key-upper\.yaml:2:44 api\.api_key_env: looks like an API key, not the name of a variable/,
  'latin1.yaml': /^latin1\.yaml:3:17 the file is not valid UTF-8 text$/,
  'list.yaml': /^list\.yaml:1:1 \(top level\): must be a mapping, not a list$/,
  'missing-items.yaml': /^missing\.csv: file not found$/,
  'output-proc.yaml':
    /^output-proc\.yaml:2:16 output: \/proc\/pixelmill is inside \/proc, a folder of the operating system/,
  'output-root.yaml': /^output-root\.yaml:2:9 output: \/ is a system or home folder/,
  'path-long.yaml':
    /^path-long\.yaml:4:5 items\[0\]: output\.path_template makes a file or folder name of 267 bytes for this item \(at most 255\)/,
  'path-nul.yaml': /^path-nul\.yaml:2:\d+ output\.path_template: must not contain control characters/,
  'path-state.yaml':
    /^path-state\.yaml:2:\d+ output\.path_template: must not write into \.pixelmill\/, the run's state folder/,
  'ranges.yaml': /^ranges\.yaml:\d+:\d+ items\[0\]\.(size|resolution|n): /,
  'syntax.yaml': /^syntax\.yaml:3:13 Missing closing "quote$/,
  'task-timeout.yaml':
    /^task-timeout\.yaml:2:25 limits\.task_timeout: must be a duration such as "90s", "30m" or "2h"/,
  'types.yaml':
    /^types\.yaml:2:32 limits\.requests_per_second: must be "auto" or a positive number of calls per second, not "fast"$/,
  'unknown.yaml': /^unknown\.yaml:5:5 items\[0\]\.sise: unknown field \(did you mean "size"\?\)$/,
  'typo-keys.yaml':
    /^typo-keys\.yaml:3:3 limits\.requets_per_second: unknown field \(did you mean "requests_per_second"\?\)$/,
  'huge-file.yaml':
    /^huge-file\.yaml: file is 10\d\.\d MiB, over the \d+ MiB limit: put a big catalog in an items_file/,
  // Over a million rows: refused at the limit, before the rows are validated or held.
  'huge-items.yaml':
    /^huge-items\.csv:1000002:1 more than 1,000,000 items: split the catalog into several manifests$/,
};

/** Manifest file -> its complete problem list, where repetition or order is what is checked. */
const EXACT: Record<string, string[]> = {
  'csv-header.yaml': ['csv-header.csv:1:4 promt: unknown column (did you mean "prompt"?)'],
  'typo-keys.yaml': [
    'typo-keys.yaml:3:3 limits.requets_per_second: unknown field (did you mean "requests_per_second"?)',
    'typo-keys.yaml:5:5 items[0].promt: unknown field (did you mean "prompt"?)',
  ],
  'unknown.yaml': [
    'unknown.yaml:2:1 colour: unknown field',
    'unknown.yaml:5:5 items[0].sise: unknown field (did you mean "size"?)',
  ],
};

/**
 * Cases checked through the built CLI, as a user runs it: a YAML syntax error, an items file,
 * several problems in order, a key written into the manifest, and the largest file.
 */
const THROUGH_CLI = new Set([
  'syntax.yaml',
  'csv.yaml',
  'unknown.yaml',
  'key-in-manifest.yaml',
  'huge-items.yaml',
]);

let dir: string;
const startedIn = process.cwd();
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pixelmill-bad-'));
  // In-process cases name files as the CLI does, relative to the folder it runs in.
  process.chdir(dir);
  for (const name of readdirSync(CORPUS)) copyFileSync(join(CORPUS, name), join(dir, name));
  // Generated, not committed: a 105 MB manifest, and an items file of a million rows and more
  // behind a small manifest. Its rows are short: their number is what is refused, and longer
  // rows only cost seconds of parsing.
  const big = async (file: string, head: string, line: string): Promise<void> => {
    const out = createWriteStream(join(dir, file));
    out.write(head);
    const block = line.repeat(1000);
    for (let written = 0; written < 105 * 1024 * 1024; written += block.length) {
      if (!out.write(block)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');
  };
  await big('huge-file.yaml', 'name: x\nitems:\n', `  - prompt: ${'x'.repeat(100)}\n`);
  writeFileSync(join(dir, 'huge-items.csv'), `prompt\n${'y\n'.repeat(1_000_010)}`);
  writeFileSync(join(dir, 'huge-items.yaml'), 'name: x\nitems_file: huge-items.csv\n');
});
afterAll(() => {
  process.chdir(startedIn);
  rmSync(dir, { recursive: true, force: true });
});

interface Validated {
  code: number;
  stdout: string;
  stderr: string;
}

function validate(file: string): Promise<Validated> {
  return THROUGH_CLI.has(file) ? validateWithCli(file) : validateInProcess(file);
}

function validateWithCli(file: string): Promise<Validated> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, 'validate', file], { cwd: dir }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/**
 * `pixelmill validate` without the process: its action is loadManifest, and the CLI prints a
 * UserError with userErrorText and exits 1. Anything else thrown is a crash, and fails the case.
 */
async function validateInProcess(file: string): Promise<Validated> {
  try {
    loadManifest(file);
  } catch (error) {
    if (isUserError(error)) return { code: 1, stdout: '', stderr: userErrorText(error) };
    throw error;
  }
  return { code: 0, stdout: `pixelmill: ${file}: valid\n`, stderr: '' };
}

describe('a corpus of broken manifests', () => {
  it('has an expectation for every file in the corpus', () => {
    const manifests = readdirSync(CORPUS).filter((name) => name.endsWith('.yaml'));
    expect(manifests.filter((name) => !(name in EXPECTED))).toEqual([]);
    expect([...THROUGH_CLI].filter((name) => !(name in EXPECTED))).toEqual([]);
  });

  it.each(Object.entries(EXPECTED))(
    '%s: exit 1 and a clear line that says where',
    async (file, expected) => {
      const { code, stdout, stderr } = await validate(file);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      const [summary, ...problems] = stderr.trimEnd().split('\n');
      expect(summary).toMatch(new RegExp(`^pixelmill: ${file.replace('.', '\\.')}: \\d+ problems?$`));
      expect(problems.length).toBeGreaterThan(0);
      expect(
        problems.map((line) => line.trim()).some((line) => expected.test(line)),
        stderr,
      ).toBe(true);
      expect(stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m); // no stack trace
      expect(problems.length).toBeLessThanOrEqual(201); // at most 200 problems, then "... and N more"
      if (EXACT[file]) expect(problems.map((line) => line.trim())).toEqual(EXACT[file]);
      // A key written by mistake is not quoted back.
      for (const key of ['sk-live-123', 'sk_live_4f9a', '4F9A8B7C6D5E']) expect(stderr).not.toContain(key);
    },
    30_000,
  );
});
