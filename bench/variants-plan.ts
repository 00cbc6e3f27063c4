// Templates and variants at catalog scale (issue #40): a product export of 100,000 rows (id, sku,
// name, colour, material, category) and a manifest of 3 variants (one with a `where`, selecting
// every category), so 300,000 outputs, each prompt rendered from a template. Timed from spawn to
// exit with the CLI's own node flags, peak RSS from the kernel's high-water mark: `validate`;
// `plan` of a new catalog; and `plan` after one variant's template is edited, against a catalog
// index of every output with its file on disk (target: validate + plan within 10 s and 1 GB).
//
//   npm run build && node dist/bench/variants-plan.js [--products 100000] [--json figures.json]
//
// `--keep DIR` writes the catalog, the manifest and the index in DIR and leaves them there, to
// profile a command on them (`node --cpu-prof dist/client/main.js plan DIR/catalog.yaml --json`).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generationKey } from '../catalog/generation-key.js';
import { catalogHeader, catalogIndexLines, type CatalogEntry } from '../catalog/index-file.js';
import { loadManifest } from '../manifest/load.js';
import { CATALOG_INDEX_FILE, STATE_DIR_NAME } from '../runstate/index.js';
import { round } from './figures.js';
import { exited, ProcessSampler, spawnCli } from './processes.js';

const CATEGORIES = ['chair', 'sofa', 'table', 'lamp', 'rug'];
const COLOURS = ['red', 'natural', 'white', 'dark', 'gold', 'grey', 'blue', 'sand'];
const MATERIALS = ['oak', 'pine', 'ash', 'brass', 'steel', 'wool', 'jute', 'linen'];

export interface CliFigures {
  /** Spawn to exit. */
  seconds: number;
  /** CPU seconds (user and system) of the process: what a busy machine inflates least. */
  cpu_s: number;
  peak_rss_mb: number;
}

export interface VariantsPlanFigures {
  products: number;
  outputs: number;
  csv_mb: number;
  validate: CliFigures;
  plan_new: CliFigures;
  validate_plus_plan_s: number;
  validate_plus_plan_cpu_s: number;
  plan_edited_variant: CliFigures & { changed: number; unchanged: number };
}

function writeCatalog(dir: string, products: number): number {
  const rows = ['id,sku,name,colour,material,category'];
  for (let i = 0; i < products; i++) {
    const category = CATEGORIES[i % CATEGORIES.length]!;
    const material = MATERIALS[(i >> 3) % MATERIALS.length]!;
    rows.push(
      `p${i},SKU-${100000 + i},${material} ${category} no. ${i},${COLOURS[i % COLOURS.length]},${material},${category}`,
    );
  }
  const text = `${rows.join('\n')}\n`;
  writeFileSync(join(dir, 'products.csv'), text);
  return Buffer.byteLength(text);
}

function writeManifest(dir: string, roomTemplate: string): string {
  const file = join(dir, 'catalog.yaml');
  writeFileSync(
    file,
    [
      'name: bench-variants',
      'output: { dir: ./out, path_template: "{variant}/{id}_{index}.{ext}" }',
      'limits: { requests_per_second: 50 }',
      'defaults: { prompt_template: "{name} in {colour} {material}, {style}" }',
      'variants:',
      '  - { id: studio, variables: { style: studio shot on white } }',
      `  - { id: room, prompt_template: "${roomTemplate}", size: "16:9", where: { category: [${CATEGORIES.join(', ')}] } }`,
      '  - { id: detail, prompt_template: "macro close-up of the {material} of the {name}" }',
      'items_file: products.csv',
    ].join('\n'),
  );
  return file;
}

async function timeCli(dir: string, args: string[]): Promise<CliFigures & { stdout: string }> {
  const started = performance.now();
  const child = spawnCli(args, { cwd: dir });
  const rss = new ProcessSampler(child.pid!, 50);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await exited(child);
  const seconds = (performance.now() - started) / 1000;
  const peakRssMb = rss.stop();
  if (code !== 0) throw new Error(`pixelmill ${args[0]} exited with ${code}: ${stderr.trim().slice(0, 500)}`);
  return { seconds: round(seconds, 2), cpu_s: round(rss.cpuSeconds(), 2), peak_rss_mb: peakRssMb, stdout };
}

/** An index of every output as a finished run leaves it, each image a small file on disk. */
function writeIndex(dir: string, manifest: string): void {
  const loaded = loadManifest(manifest);
  const run = 'pixelmill/bench-variants@bench';
  for (const variant of loaded.expansion?.variants ?? [])
    mkdirSync(join(dir, 'out', variant.id), { recursive: true });
  mkdirSync(join(dir, 'out', STATE_DIR_NAME), { recursive: true });
  const entries: CatalogEntry[] = loaded.items.map((item) => {
    const path = `${item.variant}/${item.id}_0.png`;
    const bytes = Buffer.from(`image of ${item.id}`);
    writeFileSync(join(dir, 'out', path), bytes);
    return {
      key: generationKey(item),
      id: item.id,
      images: [
        {
          path,
          sha256: '0'.repeat(64),
          bytes: bytes.length,
          source_url: `http://results.invalid/${item.id}`,
        },
      ],
      task_id: `task-${item.id}`,
      attempts: 1,
      credits_cost: 1,
      made_by: run,
      used_by: run,
    };
  });
  const header = catalogHeader({
    catalog: 'bench-variants',
    run,
    manifest_hash: loaded.hash,
    items: entries.length,
    finished_at: new Date().toISOString(),
  });
  writeFileSync(
    join(dir, 'out', STATE_DIR_NAME, CATALOG_INDEX_FILE),
    [...catalogIndexLines({ header, entries })].join(''),
  );
}

export async function variantsPlan(dir: string, products: number): Promise<VariantsPlanFigures> {
  const csvBytes = writeCatalog(dir, products);
  const manifest = writeManifest(dir, '{name} in a bright living room, lifestyle photo');
  const outputs = products * 3;
  const validate = await timeCli(dir, ['validate', manifest]);
  if (!validate.stdout.includes(`= ${outputs} items`))
    throw new Error(`validate said: ${validate.stdout.trim()}`);
  const planNew = await timeCli(dir, ['plan', manifest, '--json']);
  if ((JSON.parse(planNew.stdout) as { generate: number }).generate !== outputs)
    throw new Error(`plan of the new catalog: ${planNew.stdout.slice(0, 300)}`);

  writeIndex(dir, manifest);
  writeManifest(dir, '{name} in a bright living room at dusk, lifestyle photo');
  const edited = await timeCli(dir, ['plan', manifest, '--json']);
  const { counts } = JSON.parse(edited.stdout) as { counts: Record<string, number> };
  if (counts.changed !== products || counts.unchanged !== outputs - products)
    throw new Error(`plan of the edited variant counted ${JSON.stringify(counts)}`);
  const figures = ({ seconds, cpu_s, peak_rss_mb }: CliFigures): CliFigures => ({
    seconds,
    cpu_s,
    peak_rss_mb,
  });
  return {
    products,
    outputs,
    csv_mb: round(csvBytes / 1e6, 2),
    validate: figures(validate),
    plan_new: figures(planNew),
    validate_plus_plan_s: round(validate.seconds + planNew.seconds, 2),
    validate_plus_plan_cpu_s: round(validate.cpu_s + planNew.cpu_s, 2),
    plan_edited_variant: { ...figures(edited), changed: counts.changed!, unchanged: counts.unchanged! },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      products: { type: 'string', default: '100000' },
      json: { type: 'string' },
      keep: { type: 'string' },
    },
  });
  const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'pixelmill-bench-variants-'));
  if (values.keep) mkdirSync(dir, { recursive: true });
  try {
    const figures = await variantsPlan(dir, Number(values.products));
    const result = {
      benchmark: 'variants-plan',
      date: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      ...figures,
    };
    console.log(JSON.stringify(result, null, 2));
    if (values.json) writeFileSync(values.json, `${JSON.stringify(result, null, 2)}\n`);
  } finally {
    if (!values.keep) rmSync(dir, { recursive: true, force: true });
  }
}

await main();
