// items_file readers (manifest/items-file.ts): rows with their lines, a header that cannot map to
// fields refused whole, a misnamed column said once at its cell, an unclosed quote at its opening,
// and a file over the item limit cut off at the limit with one problem.
import { describe, expect, it } from 'vitest';
import { readCsvRows, readJsonlRows } from '../manifest/items-file.js';

describe('items_file readers', () => {
  it('stop one row past the limit and say so, for CSV and JSONL', () => {
    const csv = readCsvRows('prompt\na\nb\nc\nd\n', 2).rows;
    expect(csv.map((row) => row.value ?? row.problem)).toEqual([
      { prompt: 'a' },
      { prompt: 'b' },
      'more than 2 items: split the catalog into several manifests',
    ]);
    expect(csv.at(-1)).toMatchObject({ line: 4, overLimit: true });

    const jsonl = readJsonlRows('{"prompt":"a"}\n\n{"prompt":"b"}\r\n{"prompt":"c"}\n{"prompt":"d"}', 2).rows;
    expect(jsonl.map((row) => [row.line, row.value ?? row.problem])).toEqual([
      [1, { prompt: 'a' }],
      [3, { prompt: 'b' }],
      [4, 'more than 2 items: split the catalog into several manifests'],
    ]);
  });

  it('reads every row under the limit, with the line each starts on', () => {
    expect(
      readJsonlRows('{"prompt":"a"}\n[1]\n{"prompt":').rows.map((row) => [row.line, row.problem ?? 'ok']),
    ).toEqual([
      [1, 'ok'],
      [2, 'each line must be a JSON object'],
      [3, expect.stringMatching(/^JSON syntax: /)],
    ]);
    // A quoted cell over two lines, a blank line, and a last row without a line break.
    expect(readCsvRows('id,prompt\nx,"a\nlamp"\n\ny,b\nz,c').rows.map((row) => row.line)).toEqual([2, 5, 6]);
  });

  it('refuses a header with a column twice or an object internal, whole, at the cell', () => {
    expect(readCsvRows('id,prompt,id\na,b,c\n')).toEqual({
      fileProblems: [
        { line: 1, col: 11, problem: 'CSV header: column "id" appears twice (columns 1 and 3)' },
      ],
      absentFields: [],
      rows: [],
    });
    expect(readCsvRows('prompt,constructor\na,b\n').fileProblems).toEqual([
      { line: 1, col: 8, problem: 'CSV header: column 2 "constructor" is not an item field' },
    ]);
  });

  it('says a misspelt column once, at its header cell, with the field it most likely means', () => {
    const read = readCsvRows('id,promt,size\na,hello,1:1\nb,world,1:1\nc,again,1:1');
    expect(read.fileProblems).toEqual([
      { line: 1, col: 4, problem: 'promt: unknown column (did you mean "prompt"?)' },
    ]);
    // Its cells are left out of the rows; the prompt they all lack is the header's problem, not theirs.
    expect(read.absentFields).toEqual(['prompt']);
    expect(read.rows.map((row) => row.value)).toEqual([
      { id: 'a', size: '1:1' },
      { id: 'b', size: '1:1' },
      { id: 'c', size: '1:1' },
    ]);
    // Quoted names, a byte order mark and a blank line before the header; an unrelated name is a
    // variable of the items (issue #40), as is a near one that a template names.
    const odd = readCsvRows('\uFEFF\n"id","Sise",colour,prompt\nx,1:1,red,p\n');
    expect(odd.fileProblems).toEqual([
      { line: 2, col: 6, problem: 'Sise: unknown column (did you mean "size"?)' },
    ]);
    expect(odd.rows[0]?.value).toEqual({ id: 'x', prompt: 'p', variables: { colour: 'red' } });
    expect(readCsvRows('id,Sise,prompt\nx,1:1,p\n', 10, { named: new Set(['Sise']) }).fileProblems).toEqual(
      [],
    );
    // A required column that no misspelling explains is said once too.
    expect(readCsvRows('id,text\na,b\n').fileProblems).toEqual([
      { line: 1, col: 1, problem: 'prompt: no "prompt" column, which every row needs' },
    ]);
  });

  it('points an unclosed quote at the cell it opens, not at the end of the file', () => {
    expect(readCsvRows('id,prompt\na,"hello\nb,world\n').fileProblems).toEqual([
      {
        line: 2,
        col: 3,
        problem: 'CSV syntax: Quote Not Closed: the quoted cell opened here runs to the end of the file',
      },
    ]);
    // Quotes closed before it, quoted line breaks and "" escapes do not mislead the search.
    expect(readCsvRows('id,prompt\na,"x\n""y"""\n"b",z\nc,"w\n').fileProblems).toEqual([
      expect.objectContaining({ line: 5, col: 3 }),
    ]);
  });
});

describe('CSV without quotes (read by splitting, not by csv-parse)', () => {
  /** The same text with its header's last cell quoted: csv-parse reads it, to the same records. */
  const quotedHeader = (text: string): string =>
    text.replace(/^(\uFEFF?(?:\n)*)([^\n]*?)([^,\n]*)(\n|$)/, (_, lead, before, last, end) => {
      return `${lead}${before}"${last}"${end}`;
    });
  const texts: Record<string, string> = {
    plain: 'id,prompt,size\na,oak chair,1:1\nb,pine chair,16:9\n',
    'blank lines, before the header too, and no last line break': '\n\nid,prompt\n\na,x\n\n\nb,y',
    'a byte order mark': '\uFEFFid,prompt\na,x\n',
    'a line of spaces': 'id,prompt\na,x\n   \nb,y\n',
    'a row with a cell too many': 'id,prompt\na,x\nb,y,z\nc,w\n',
    'a row with a cell too few': 'id,prompt\na\n',
    'one column, with a line of spaces': 'prompt\nx\n \n\ny\n',
    'an unnamed last column': 'prompt,\nx,\ny,5\n',
    'empty cells and a row of commas': 'id,prompt,n,image_urls\na,x,,\n,,,\nb,y,2,p.png|q.png\n',
    'variables named like numbers and like fields': 'id,prompt,2,variables,colour,10\na,x,two,v,red,ten\n',
    'a misspelt column': 'id,promt,size\na,hello,1:1\n',
    'a column twice': 'id,prompt,id\na,b,c\n',
    'a header alone': 'id,prompt\n',
  };
  for (const [name, text] of Object.entries(texts)) {
    it(`reads ${name} as csv-parse does`, () => {
      expect(quotedHeader(text)).not.toEqual(text);
      for (const maxRows of [Number.POSITIVE_INFINITY, 1])
        for (const options of [{}, { promptFromTemplates: true }])
          expect(readCsvRows(text, maxRows, options)).toEqual(
            readCsvRows(quotedHeader(text), maxRows, options),
          );
    });
  }
});
