// `pixelmill validate FILE`: the same check every run does before it starts.
import type { Command } from 'commander';
import { loadManifest } from '../../manifest/load.js';
import { manifestJsonSchema } from '../../manifest/json-schema.js';

export function registerValidateCommand(program: Command): void {
  program
    .command('validate')
    .description('check a manifest and its items file; print every problem as file:line:col path: message')
    .argument('<manifest>', 'the manifest YAML file')
    .addHelpText(
      'after',
      '\nExamples:\n  $ pixelmill validate manifests/demo.yaml\n\nExit codes: 0 valid, 1 invalid (every problem is listed).',
    )
    .action((file: string) => {
      const { settings, items } = loadManifest(file);
      const images = items.reduce((sum, item) => sum + item.n, 0);
      process.stdout.write(`${file}: valid: "${settings.name}", ${items.length} items, ${images} images\n`);
    });

  program
    .command('schema')
    .description('print the JSON Schema of manifests (for editors)')
    .action(() => {
      process.stdout.write(`${JSON.stringify(manifestJsonSchema(), null, 2)}\n`);
    });
}
