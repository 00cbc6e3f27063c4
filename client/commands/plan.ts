// `pixelmill plan FILE`: what `run` would do with an edited catalog before anything is spent:
// items new, changed, unchanged, to fetch again and removed, the credits and the time. Reads the
// output's catalog index and what is stored there; needs no Temporal and submits nothing.
import type { Command } from 'commander';
import { loadManifestAt } from '../../manifest/store-source.js';
import { describePlan, planCatalog, planJson } from '../catalog-plan.js';
import { growHeapAdaptively } from '../heap-growth.js';
import { CLI_S3_ATTEMPTS } from '../run-files.js';
import { examples } from './examples.js';

export function registerPlanCommand(program: Command): void {
  program
    .command('plan')
    .description('compare a manifest with what its output holds: what a run would generate, reuse and cost')
    .argument('<manifest>', 'the manifest YAML file, or its s3:// URL')
    .option('--json', 'print the plan as JSON, for scripts')
    .option('--prune', 'plan to delete stored results of items the manifest no longer has')
    .addHelpText(
      'after',
      examples('pixelmill plan catalog.yaml', 'pixelmill plan catalog.yaml --json') +
        '\n\nItems are compared by what decides their images (model, prompt, size, resolution, n,' +
        '\nlanguage, references), not by id: an item renamed with the same content is reused.' +
        '\nWith variants, each item x variant is an output: an edited template regenerates the' +
        '\noutputs whose prompts it changes, and the plan says how many of each variant.' +
        '\nExit codes: 0 planned, 1 invalid manifest or unreadable output.',
    )
    .action(async (file: string, options: { json?: boolean; prune?: boolean }) => {
      growHeapAdaptively();
      const prune = Boolean(options.prune);
      const at = await loadManifestAt(file, { maxAttempts: CLI_S3_ATTEMPTS });
      let plan;
      try {
        plan = await planCatalog(at.manifest, { prune });
      } finally {
        await at.release();
      }
      process.stdout.write(
        options.json
          ? `${JSON.stringify(planJson(plan, prune), null, 2)}\n`
          : `pixelmill: ${plan.catalog}: ${describePlan(plan, prune)}\n`,
      );
    });
}
