// `pixelmill redo RUN --ids a,b,c`: generates chosen items of a finished run again, whatever
// their status, into the same output, the way retry-failed does for failed ones: a reviewer's
// "these are not good enough" from the gallery (which writes this command line for its
// selection). Each id must be an item of the run.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { UserError } from '../../common/errors.js';
import { originalRunId } from '../retries.js';
import { resolveRun } from '../runs.js';
import { quietTemporalLogs } from '../embedded.js';
import { parseBudget, runAgain, type RetryOptions } from './retry-failed.js';
import { examples, isDebug, RUN_ARGUMENT, withRun } from './with-run.js';

interface RedoOptions extends RetryOptions {
  ids?: string;
  idsFile?: string;
}

const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** The ids asked for: `--ids` (commas or spaces) and `--ids-file` (one per line; # comments). */
function askedIds(options: RedoOptions): Set<string> {
  const words: string[] = [];
  if (options.ids) words.push(...options.ids.split(/[\s,]+/));
  if (options.idsFile) {
    let text: string;
    try {
      text = readFileSync(options.idsFile, 'utf8');
    } catch (error) {
      throw new UserError(
        'ids_file_unreadable',
        `${options.idsFile}: ${(error as NodeJS.ErrnoException).code ?? 'cannot be read'}`,
      );
    }
    for (const line of text.split('\n')) words.push(...line.replace(/#.*/, '').split(/[\s,]+/));
  }
  const ids = new Set(words.filter(Boolean));
  if (ids.size === 0)
    throw new UserError('ids_missing', 'name the items to generate again: --ids a,b,c or --ids-file FILE');
  return ids;
}

export function registerRedoCommand(program: Command): void {
  program
    .command('redo')
    .description('generate chosen items of a finished run again, whatever their status, into the same output')
    .argument(...RUN_ARGUMENT)
    .option('--ids <ids>', 'the items, by id, separated by commas or spaces')
    .option('--ids-file <file>', 'a file of item ids, one per line (the gallery downloads one)')
    .option(
      '--budget <credits>',
      "the new attempt's credit budget (default: what the run's budget has left)",
      parseBudget,
    )
    .option('--no-progress', 'print plain progress lines instead of redrawing')
    .addHelpText(
      'after',
      examples(
        'pixelmill redo pixelmill/demo --ids demo-01,demo-07',
        'pixelmill redo manifests/demo.yaml --ids-file redo.txt',
      ) +
        '\n\nLike retry-failed: the items run as <run>/retry-N, their images replace the old ones at the' +
        "\nsame paths, and the run's report is rewritten with their new outcomes (attempts and credits add up).",
    )
    .action((run: string, options: RedoOptions, command: Command) => {
      const ids = askedIds(options);
      quietTemporalLogs(isDebug(command));
      const resolved = resolveRun(run);
      return withRun(
        { ...resolved, runId: originalRunId(resolved.runId) },
        async (session, runId, manifest) => {
          const seen = new Set<string>();
          process.exitCode = await runAgain(session, runId, options, manifest, {
            choose: (item) => {
              if (!ids.has(item.id)) return false;
              seen.add(item.id);
              return true;
            },
            noun: 'chosen item',
            check: () => {
              const unknown = [...ids].filter((id) => !seen.has(id));
              if (unknown.length > 0)
                throw new UserError(
                  'ids_unknown',
                  `${runId} has no item${unknown.length > 1 ? 's' : ''} ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', ...' : ''}: nothing was started`,
                );
            },
          });
        },
        { log: say },
      );
    });
}
