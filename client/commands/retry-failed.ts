// `pixelmill retry-failed RUN`: a new attempt for the failed items of a finished run, into the
// same output directory, then the run's report rewritten with their new outcomes. How a retry is
// made and folded back is in client/retries.ts. A retry that is already running is attached to,
// not started twice. Failures that cannot succeed again (a blocked prompt, a refused parameter)
// are left out unless `--all` is given, and the command says how many and why.
import { InvalidArgumentError, type Command } from 'commander';
import { UserError } from '../../common/errors.js';
import { plural } from '../../common/words.js';
import type { PlannedItem } from '../../manifest/normalize.js';
import { writeFileAtomic, type LoadedPlan, type OutcomeLine } from '../../runstate/index.js';
import { loadManifest, type LoadedManifest } from '../../manifest/load.js';
import { quietTemporalLogs } from '../embedded.js';
import { startLocalWorkers } from '../local-workers.js';
import {
  cannotSucceedAgain,
  describeReasons,
  nextRetryNumber,
  originalRunId,
  retryFiles,
  retryManifestText,
  retryRunId,
  saveRetryRecord,
  type RetryRecord,
} from '../retries.js';
import { foldEndedRetries, rewriteReport } from '../rewrite-report.js';
import {
  freezePlan,
  locateRun,
  readPlan,
  retryRecordsDir,
  runState,
  type RunLocation,
} from '../run-files.js';
import { exitCodeOf, refuseOverRunningShards, resolveRun, startOrAttach } from '../runs.js';
import { workflowUrl, type Session } from '../session.js';
import { watchRun } from '../watch.js';
import { describeReport } from './report.js';
import { examples, isDebug, RUN_ARGUMENT, withRun } from './with-run.js';
import { s3UrlOf } from '../../storage/s3-location.js';

export interface RetryOptions {
  budget?: number;
  progress: boolean;
  /** Retry failures that cannot succeed again too. */
  all?: boolean;
}

export function parseBudget(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1)
    throw new InvalidArgumentError('expected a whole number of credits from 1');
  return n;
}

const say = (line: string): void => void process.stderr.write(`${line}\n`);

/** Failed items, and the items the run's deadline left unfinished: what a retry runs again. */
function retryable(outcome: OutcomeLine | undefined): boolean {
  return (
    outcome?.status === 'failed' || (outcome?.status === 'cancelled' && outcome.error?.code === 'deadline')
  );
}

/** The retry's budget: --budget, else what the run's budget has left. */
function retryBudget(
  loaded: LoadedPlan,
  latest: (OutcomeLine | undefined)[],
  options: RetryOptions,
): number | undefined {
  if (options.budget !== undefined) return options.budget;
  const budget = loaded.meta.budgetCredits;
  if (budget === undefined) return undefined;
  const spent = latest.reduce((sum, line) => sum + (line?.credits_cost ?? 0), 0);
  const left = Math.floor(budget - spent);
  if (left < 1) {
    throw new UserError(
      'budget_exhausted',
      `the run's budget of ${budget} credits is spent (${spent}); give the retry its own with --budget N`,
    );
  }
  return left;
}

interface PreparedRetry {
  /** Undefined when nothing is left to retry. */
  record?: RetryRecord;
  /** The retry's manifest, when it was written here (parsed for its hash, and kept). */
  manifest?: LoadedManifest;
  /** Why each failed item left out was left out (`content_blocked`, `invalid_size`, ...). */
  skipped: string[];
}

/**
 * Which items a new attempt runs: `true` runs it, `false` leaves it out, a string leaves it out
 * and says why (counted in the command's message).
 */
export type ItemChoice = (item: PlannedItem, outcome: OutcomeLine | undefined) => boolean | string;

/** retry-failed's choice: failed items (and the deadline's), less those that cannot succeed again. */
function failedItems(options: RetryOptions): ItemChoice {
  return (_, outcome) => {
    if (!outcome || !retryable(outcome)) return false;
    return (options.all ? undefined : cannotSucceedAgain(outcome)) ?? true;
  };
}

/** Writes retry-N.yaml and retry-N.json for the chosen items; no record when none is chosen. */
async function prepareRetry(
  location: RunLocation,
  options: RetryOptions,
  choose: ItemChoice,
  check?: () => void,
): Promise<PreparedRetry> {
  const loaded = await readPlan(location.plan);
  const latest = await runState.latestOutcomes(location.plan, loaded.items);
  const failed: PlannedItem[] = [];
  const skipped: string[] = [];
  for (const [index, item] of loaded.items.entries()) {
    const choice = choose(item, latest[index]);
    if (choice === true) failed.push(item);
    else if (typeof choice === 'string') skipped.push(choice);
  }
  check?.();
  if (failed.length === 0) return { skipped };
  const budgetCredits = retryBudget(loaded, latest, options);
  const stateDir = retryRecordsDir(location);
  const number = nextRetryNumber(stateDir);
  const files = retryFiles(stateDir, number);
  const text = retryManifestText(loaded.meta, failed, {
    of: location.runId,
    number,
    ...(budgetCredits !== undefined ? { budgetCredits } : {}),
  });
  await writeFileAtomic(files.manifest, [text]);
  const manifest = loadManifest(files.manifest);
  const record: RetryRecord = {
    number,
    runId: retryRunId(location.runId, number),
    of: location.runId,
    ofExecution: location.execution,
    manifestFile: files.manifest,
    manifestHash: manifest.hash,
    items: failed.length,
    folded: false,
  };
  await saveRetryRecord(stateDir, record);
  return { record, manifest, skipped };
}

/** What a new attempt is for: which items, and how the command names them. */
export interface AttemptKind {
  choose: ItemChoice;
  /** `failed item`, `chosen item`. */
  noun: string;
  /** Called once the items are chosen, before anything starts: may refuse with a UserError. */
  check?: () => void;
}

export async function runAgain(
  session: Session,
  runId: string,
  options: RetryOptions,
  runManifest: LoadedManifest | undefined,
  kind: AttemptKind,
): Promise<number> {
  const location = await locateRun(session.client, runId, runManifest);
  if (location.status === 'RUNNING') {
    throw new UserError(
      'run_in_progress',
      `${runId} is still running: let it finish (\`pixelmill run\` on its manifest resumes it) or cancel it, then retry its failed items`,
    );
  }
  await refuseOverRunningShards(session.client, {
    workflowId: runId,
    runId: location.execution,
    status: location.status,
  });
  const { running } = await foldEndedRetries(session.client, location);
  const prepared: PreparedRetry = running
    ? { record: running, skipped: [] }
    : await prepareRetry(location, options, kind.choose, kind.check);
  const { record, skipped } = prepared;
  if (skipped.length > 0) {
    const items = skipped.length === 1 ? '1 item' : `${skipped.length} items`;
    say(
      `pixelmill: skipping ${items} that cannot succeed again (${describeReasons(skipped)}); --all retries them too`,
    );
  }
  if (!record) {
    if (skipped.length > 0) {
      say(`pixelmill: ${runId} has no other failed items: nothing to retry`);
      return 3;
    }
    say(`pixelmill: ${runId} has no ${kind.noun}s: nothing to retry`);
    return 0;
  }
  const retryManifest = prepared.manifest ?? loadManifest(record.manifestFile);
  const workers = await startLocalWorkers(session, retryManifest.settings, say);
  try {
    const { handle, how, unindexed } = await startOrAttach(
      session.client,
      record.runId,
      {
        manifestFile: record.manifestFile,
        input: {
          manifestHash: record.manifestHash,
          apiAccount: workers.api.account,
          apiBaseUrl: workers.api.baseUrl,
          emulated: workers.api.emulated,
        },
        freezePlan: () => freezePlan(retryManifest),
      },
      false,
    );
    const { objectStore } = (await readPlan(location.plan)).meta;
    const into = objectStore ? s3UrlOf(objectStore) : location.outputDir;
    say(
      `pixelmill: ${how === 'started' ? 'started' : 'attached to'} ${record.runId}: ${plural(record.items, kind.noun)} of ${runId} again, into ${into}`,
    );
    const link = workflowUrl(session, record.runId);
    if (link) say(`pixelmill: Temporal Web UI: ${link}`);
    if (unindexed) say(`pixelmill: warning: ${unindexed}`);
    const code = await watchRun(session.client, handle, {
      tty: options.progress,
      workers: workers.inProcess,
    });
    if (code === 130) {
      say(
        `pixelmill: when ${record.runId} has ended, \`pixelmill report ${runId}\` adds its outcomes to the report`,
      );
      return code;
    }
  } finally {
    await workers.close();
  }
  const report = await rewriteReport(session.client, location);
  say(describeReport(runId, report));
  return exitCodeOf(report);
}

export function registerRetryFailedCommand(program: Command): void {
  program
    .command('retry-failed')
    .description(
      "run a finished run's failed items (and those its deadline left unfinished) again, into the same output directory",
    )
    .argument(...RUN_ARGUMENT)
    .option(
      '--budget <credits>',
      "the retry's credit budget (default: what the run's budget has left)",
      parseBudget,
    )
    .option(
      '--all',
      'retry the failures that cannot succeed again as they are too (content policy, refused parameters)',
    )
    .option('--no-progress', 'print plain progress lines instead of redrawing')
    .addHelpText(
      'after',
      examples(
        'pixelmill retry-failed manifests/demo.yaml',
        'pixelmill retry-failed pixelmill/demo --budget 200',
        'pixelmill retry-failed pixelmill/demo --all',
      ) +
        '\n\nThe failed items (same ids, same settings, so the same image paths) are written to' +
        '\n<output>/.pixelmill/retry-N.yaml and run as <run>/retry-N; it waits for the retry, then' +
        "\nrewrites the run's report with each item's newest outcome (attempts and credits add up)." +
        '\nItems that failed for good (content_blocked, or a parameter the API refused with a 4xx such as' +
        '\ninvalid_size) are skipped, and counted, unless --all is given.' +
        '\nIf interrupted, `pixelmill report RUN` does that last step once the retry has ended.' +
        '\nExit codes: 0 every item of the run now completed (or nothing failed), 3 some items still' +
        '\nnot completed (skipped ones included), 1 error (no such run, run still running, budget spent).',
    )
    .action((run: string, options: RetryOptions, command: Command) => {
      // Runs workers: the worker runtime takes over SIGINT (to drain them), so only here.
      quietTemporalLogs(isDebug(command));
      const resolved = resolveRun(run);
      return withRun(
        { ...resolved, runId: originalRunId(resolved.runId) },
        async (session, runId, manifest) => {
          process.exitCode = await runAgain(session, runId, options, manifest, {
            choose: failedItems(options),
            noun: 'failed item',
          });
        },
        { log: say },
      );
    });
}
