// `pixelmill run MANIFEST`: validate, then start (or attach to) the manifest's run and, by
// default, watch it to the end. With nothing configured it embeds everything: a local Temporal
// dev server (persisted under .pixelmill/), the workers, and the emulator as the API.
import type { Command } from 'commander';
import { UserError } from '../../common/errors.js';
import { runWorkflowId } from '../../common/names.js';
import { freezePlan } from '../run-files.js';
import type { LoadedManifest } from '../../manifest/load.js';
import { CLI_S3_ATTEMPTS } from '../run-files.js';
import { describePlan, planCatalog } from '../catalog-plan.js';
import { loadManifestAt } from '../../manifest/store-source.js';
import { needsIncrementalRun, referenceHosting, requireReferenceUrl } from '../run-start.js';
import { quietTemporalLogs } from '../embedded.js';
import { checkOutputFolder } from '../output-check.js';
import { startLocalWorkers } from '../local-workers.js';
import { openSession, stateDirectory, workflowUrl } from '../session.js';
import { resolveTemporalTarget } from '../../temporal/connection.js';
import { startOrAttach } from '../runs.js';
import { watchRun } from '../watch.js';
import { isDebug } from './with-run.js';
import { webhookPublicUrl } from '../../webhook/config.js';
import { embeddedWebhookSecret, startEmbeddedReceiver } from '../../webhook/embedded.js';
import { DEFAULT_PROVIDER } from '../../providers/types.js';
import { webhookBaseUrl } from '../../webhook/route.js';
import { plural } from '../../common/words.js';

interface RunOptions {
  newRun?: boolean;
  dryRun?: boolean;
  prune?: boolean;
  wait?: boolean;
  progress: boolean;
  apiAccount?: string;
  force?: boolean;
}

export function registerRunCommand(program: Command): void {
  program
    .command('run')
    .description('run a manifest: every item generated, fetched and stored, durably on Temporal')
    .argument('<manifest>', 'the manifest YAML file, or its s3:// URL')
    .option(
      '--new-run',
      'generate every item again, even if this manifest has a run (live runs must be cancelled first)',
    )
    .option('--dry-run', 'print what the run would generate, reuse and cost (`pixelmill plan`), and exit')
    .option('--prune', 'delete stored results of items the manifest no longer has (kept by default)')
    .option(
      '--wait',
      'with a Temporal cluster (TEMPORAL_ADDRESS): wait until the run ends (embedded runs always wait)',
    )
    .option('--no-progress', 'print plain progress lines instead of redrawing')
    .option('--force', 'write into an output folder that already holds other files')
    .option(
      '--api-account <id>',
      "with a Temporal cluster: the API account's id that `pixelmill worker` prints, when this machine has no key",
    )
    .addHelpText(
      'after',
      [
        '',
        'Examples:',
        '  $ pixelmill run manifests/demo.yaml              # embedded Temporal + emulator, waits',
        '  $ pixelmill run manifests/demo.yaml --new-run    # start over',
        '  $ pixelmill run catalog.yaml --dry-run           # what an edited catalog would cost',
        '  $ TEMPORAL_ADDRESS=temporal:7233 pixelmill run catalog.yaml --wait',
        '  $ pixelmill run s3://shop-exports/catalog.yaml  # items_file and photos beside it in the bucket',
        '',
        'Killing it and running the same command again resumes the run. Once a run has finished,',
        'running an edited manifest generates only its new and changed items: the unchanged ones',
        'are carried over from the output (see `pixelmill plan`).',
        'Exit codes: 0 every item completed, 3 the run finished with items not completed,',
        '4 limits.deadline ended it with items unfinished (`pixelmill retry-failed` continues them),',
        '1 the run could not be done (bad manifest, bad config, unreachable service).',
      ].join('\n'),
    )
    .action(async (file: string, options: RunOptions, command: Command) => {
      process.exitCode = await runManifest(file, options, isDebug(command));
    });
}

async function runManifest(file: string, options: RunOptions, debug: boolean): Promise<number> {
  // A manifest in a bucket is copied aside with its items_file and photos until its plan is frozen.
  const at = await loadManifestAt(file, { maxAttempts: CLI_S3_ATTEMPTS });
  try {
    return await runLoaded(at.manifest, options, debug);
  } finally {
    await at.release();
  }
}

async function runLoaded(loaded: LoadedManifest, options: RunOptions, debug: boolean): Promise<number> {
  const { settings } = loaded;
  const prune = Boolean(options.prune);
  if (options.dryRun) {
    process.stdout.write(`${describePlan(await planCatalog(loaded, { prune }), prune)}\n`);
    return 0;
  }
  checkOutputFolder(settings, { force: Boolean(options.force) });
  referenceHosting(loaded, process.env);
  const emulated = !(process.env.PIXELMILL_API_BASE_URL || settings.apiBaseUrl);
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  const { webhooks } = settings;
  let webhookBase: string | undefined;

  if ((await resolveTemporalTarget()).mode === 'external') requireReferenceUrl(loaded);
  quietTemporalLogs(debug);
  const session = await openSession({ log: say });
  const cleanups: (() => Promise<void>)[] = [() => session.close()];
  try {
    const webhookSecret =
      session.mode === 'embedded' && webhooks
        ? embeddedWebhookSecret(webhooks.secretEnv, emulated)
        : undefined;
    const workers = await startLocalWorkers(session, settings, say, {
      ...(webhookSecret !== undefined ? { emulatorWebhookSecret: webhookSecret } : {}),
      ...(options.apiAccount !== undefined ? { apiAccount: options.apiAccount } : {}),
    });
    cleanups.push(() => workers.close());
    if (webhooks && webhookSecret) {
      const receiver = await startEmbeddedReceiver({
        client: session.client,
        stateDir: stateDirectory(),
        provider: settings.provider ?? DEFAULT_PROVIDER,
        keys: {
          secret: webhookSecret,
          extra: { [settings.provider ?? DEFAULT_PROVIDER]: workers.webhookKeys },
        },
        publicUrl: webhookPublicUrl(webhooks.publicUrl),
        log: say,
      });
      cleanups.push(() => receiver.server.close());
      webhookBase = receiver.baseUrl;
      say(`pixelmill: webhooks on: receiver at ${receiver.server.url}, called at ${receiver.baseUrl}/...`);
    }

    if (webhooks && !webhookBase) {
      const publicUrl = webhookPublicUrl(webhooks.publicUrl);
      if (!publicUrl) {
        throw new UserError(
          'webhook_url_missing',
          'webhooks are enabled: set PIXELMILL_WEBHOOK_URL (or webhooks.public_url) to the address where `pixelmill webhook-server` is reached',
        );
      }
      webhookBase = webhookBaseUrl(publicUrl, settings.provider ?? DEFAULT_PROVIDER);
    }

    const runId = runWorkflowId(settings.name);
    const catalog = options.newRun ? undefined : await planCatalog(loaded, { prune });
    const again = catalog !== undefined && needsIncrementalRun(catalog, loaded.hash, prune);
    const input = {
      manifestHash: loaded.hash,
      apiAccount: workers.api.account,
      apiBaseUrl: workers.api.baseUrl,
      emulated,
      ...(webhookBase ? { webhookBaseUrl: webhookBase } : {}),
      ...(settings.notify ? { notify: settings.notify } : {}),
    };
    const { handle, how, manifestChanged, unindexed } = await startOrAttach(
      session.client,
      runId,
      {
        manifestFile: settings.manifestFile,
        input,
        freezePlan: () => freezePlan(loaded, catalog?.incremental, say),
        again,
      },
      Boolean(options.newRun),
    );
    const link = workflowUrl(session, runId);
    say(
      `pixelmill: ${how === 'started' ? 'started' : how === 'running' ? 'attached to the running' : 'found the finished'} run ${runId}` +
        ` (${plural(loaded.items.length, 'item')}) on ${session.endpoint.display}`,
    );
    if (link) say(`pixelmill: Temporal Web UI: ${link}`);
    if (unindexed) say(`pixelmill: warning: ${unindexed}`);
    if (how === 'started' && catalog) say(`pixelmill: plan: ${describePlan(catalog, prune)}`);
    if (manifestChanged && how !== 'started') {
      say(
        'pixelmill: the manifest changed since this run started; the run keeps the version it started with (use --new-run to start over)',
      );
    }
    if (session.mode === 'external' && !options.wait) {
      say(`pixelmill: follow it with \`pixelmill watch ${runId}\``);
      return 0;
    }
    return await watchRun(session.client, handle, {
      tty: options.progress && process.stderr.isTTY,
      workers: workers.inProcess,
    });
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}
