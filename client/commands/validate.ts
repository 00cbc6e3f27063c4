// `pixelmill validate FILE`: the same check every run does before it starts.
import type { Command } from 'commander';
import { loadManifestAt } from '../../manifest/store-source.js';
import { CLI_S3_ATTEMPTS } from '../run-files.js';
import { growHeapAdaptively } from '../heap-growth.js';
import { examples } from './examples.js';
import { plural } from '../../common/words.js';

export function registerValidateCommand(program: Command): void {
  program
    .command('validate')
    .description('check a manifest and its items file; print every problem as file:line:col path: message')
    .argument('<manifest>', 'the manifest YAML file, or its s3:// URL')
    .addHelpText(
      'after',
      '\nExamples:\n  $ pixelmill validate manifests/demo.yaml\n  $ pixelmill validate s3://shop-exports/catalog.yaml' +
        '\n\nExit codes: 0 valid, 1 invalid (every problem is listed).',
    )
    .action(async (file: string) => {
      growHeapAdaptively();
      // A manifest in a bucket is read with its items_file and photos, as `run` reads it.
      const at = await loadManifestAt(file, { maxAttempts: CLI_S3_ATTEMPTS });
      await at.release();
      const { settings, items, expansion } = at.manifest;
      const images = items.reduce((sum, item) => sum + item.n, 0);
      // With variants, what each made: a variant whose `where` selects nothing shows as 0.
      const variants = expansion
        ? `${plural(expansion.products, 'product')} x ${plural(expansion.variants.length, 'variant')} (${expansion.variants.map((variant) => `${variant.id} ${variant.outputs}`).join(', ')}) = `
        : '';
      process.stdout.write(
        `pixelmill: ${file}: valid: "${settings.name}", ${variants}${plural(items.length, 'item')}, ${plural(images, 'image')}\n`,
      );
    });

  program
    .command('schema')
    .description('print the JSON Schema of manifests (for editors), or --markdown the reference for people')
    .option('--markdown', 'print the manifest reference (docs/manifest.md) instead')
    .addHelpText(
      'after',
      examples('pixelmill schema > manifest.schema.json', 'pixelmill schema --markdown > manifest.md') +
        '\n\nWith the YAML language server, point a manifest at the schema with a first line of' +
        '\n  # yaml-language-server: $schema=./manifest.schema.json',
    )
    .action(async (options: { markdown?: boolean }) => {
      // Imported here: the field docs read run state's formats, which validate does not need.
      const text = options.markdown
        ? (await import('../../manifest/reference.js')).manifestReference()
        : `${JSON.stringify((await import('../../manifest/json-schema.js')).manifestJsonSchema(), null, 2)}\n`;
      process.stdout.write(text);
    });
}
