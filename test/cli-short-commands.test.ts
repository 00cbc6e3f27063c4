// The short commands (validate, schema, plan) run on a program of their own that loads nothing
// else (client/short-program.ts): for the same command line it must print, fail and exit exactly
// as the whole program does (client/program.ts).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { commandName, SHORT_COMMANDS } from '../client/program-root.js';
import { main as wholeMain } from '../client/program.js';
import { main as shortMain } from '../client/short-program.js';
import { removeTempDirs, tempDir } from './support/temp-dir.js';

afterAll(removeTempDirs);

interface Answer {
  code: number;
  stdout: string;
  stderr: string;
}

async function answer(main: (argv: string[]) => Promise<number>, args: string[]): Promise<Answer> {
  let stdout = '';
  let stderr = '';
  const capture = (into: 'out' | 'err') => (chunk: string | Uint8Array) => {
    if (into === 'out') stdout += chunk.toString();
    else stderr += chunk.toString();
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture('out'));
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture('err'));
  const exitCode = process.exitCode;
  try {
    const code = await main(['node', 'pixelmill', ...args]);
    return { code, stdout, stderr };
  } finally {
    out.mockRestore();
    err.mockRestore();
    process.exitCode = exitCode;
  }
}

describe('a short command run alone', () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'products.csv'), 'id,name,colour\np1,oak chair,red\np2,pine table,white\n');
  writeFileSync(
    join(dir, 'good.yaml'),
    [
      'name: short-commands',
      'output: ./out',
      'defaults: { prompt_template: "{name} in {colour}" }',
      'variants: [{ id: studio }, { id: room, size: "16:9" }]',
      'items_file: products.csv',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'bad.yaml'),
    'name: short-commands\nitems:\n  - { id: a, prompt: "{nme}", size: 9 }\n',
  );
  const lines: string[][] = [
    ['validate', join(dir, 'good.yaml')],
    ['validate', join(dir, 'bad.yaml')],
    ['--debug', 'validate', join(dir, 'missing.yaml')],
    ['validate'],
    ['validate', '--help'],
    ['validate', join(dir, 'good.yaml'), '--what'],
    ['plan', join(dir, 'good.yaml')],
    ['plan', join(dir, 'good.yaml'), '--json', '--prune'],
    ['plan', join(dir, 'bad.yaml')],
    ['plan', '--help'],
    ['schema'],
    ['schema', '--markdown'],
  ];
  for (const args of lines) {
    it(`answers \`pixelmill ${args.join(' ').replaceAll(dir, 'DIR')}\` as the whole program does`, async () => {
      expect(SHORT_COMMANDS.has(commandName(['node', 'pixelmill', ...args])!)).toBe(true);
      const whole = await answer(wholeMain, args);
      expect(await answer(shortMain, args)).toEqual(whole);
      expect(whole.stdout + whole.stderr).not.toBe('');
    });
  }

  it('is chosen by the first word that is not an option, and only for those commands', () => {
    expect(commandName(['node', 'pixelmill', '--debug', 'plan', 'x.yaml'])).toBe('plan');
    expect(commandName(['node', 'pixelmill', '--version'])).toBeUndefined();
    expect(SHORT_COMMANDS.has(commandName(['node', 'pixelmill', 'run', 'plan.yaml'])!)).toBe(false);
  });
});
