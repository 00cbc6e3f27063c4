// items_file readers (manifest/items-file.ts): rows with their lines, a header that cannot map to
// fields refused whole, and a file over the item limit cut off at the limit with one problem.
import { describe, expect, it } from 'vitest';
import { readCsvRows, readJsonlRows } from '../manifest/items-file.js';

describe('items_file readers', () => {
  it('stop one row past the limit and say so, for CSV and JSONL', () => {
    const csv = readCsvRows('prompt\na\nb\nc\nd\n', 2);
    expect(csv.map((row) => row.value ?? row.problem)).toEqual([
      { prompt: 'a' },
      { prompt: 'b' },
      'more than 2 items: split the catalog into several manifests',
    ]);
    expect(csv.at(-1)).toMatchObject({ line: 4, overLimit: true });

    const jsonl = readJsonlRows('{"prompt":"a"}\n\n{"prompt":"b"}\r\n{"prompt":"c"}\n{"prompt":"d"}', 2);
    expect(jsonl.map((row) => [row.line, row.value ?? row.problem])).toEqual([
      [1, { prompt: 'a' }],
      [3, { prompt: 'b' }],
      [4, 'more than 2 items: split the catalog into several manifests'],
    ]);
  });

  it('reads every row under the limit, with the line each starts on', () => {
    expect(
      readJsonlRows('{"prompt":"a"}\n[1]\n{"prompt":').map((row) => [row.line, row.problem ?? 'ok']),
    ).toEqual([
      [1, 'ok'],
      [2, 'each line must be a JSON object'],
      [3, expect.stringMatching(/^JSON syntax: /)],
    ]);
    // A quoted cell over two lines, a blank line, and a last row without a line break.
    expect(readCsvRows('id,prompt\nx,"a\nlamp"\n\ny,b\nz,c').map((row) => row.line)).toEqual([2, 5, 6]);
  });

  it('refuses a header with a column twice or an object internal, whole', () => {
    expect(readCsvRows('id,prompt,id\na,b,c\n')).toEqual([
      { line: 1, col: 1, problem: 'CSV header: column "id" appears twice (columns 1 and 3)' },
    ]);
    expect(readCsvRows('prompt,constructor\na,b\n')[0]?.problem).toBe(
      'CSV header: column 2 "constructor" is not an item field',
    );
  });
});
