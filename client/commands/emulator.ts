// `pixelmill emulator [--config FILE] [--host H] [--port N]`: runs the API emulator in the
// foreground until SIGINT or SIGTERM, then closes it cleanly. Flags override the config file.
import type { Command } from 'commander';
import {
  DEFAULT_EMULATOR_CONFIG,
  DEMO_API_KEY,
  loadEmulatorConfig,
  startEmulator,
  type EmulatorConfig,
} from '../../emulator/index.js';
import { untilStopSignal } from '../interrupt.js';
import { examples, parsePort } from './with-run.js';

interface EmulatorOptions {
  config?: string;
  host?: string;
  port?: number;
}

export function registerEmulatorCommand(program: Command): void {
  program
    .command('emulator')
    .description('run a local emulator of the async image API (see docs/emulator.md)')
    .option('--config <file>', 'YAML config file (every field optional)')
    .option('--host <host>', `address to listen on (default ${DEFAULT_EMULATOR_CONFIG.host})`)
    .option(
      '--port <port>',
      `port to listen on, 0 for any free port (default ${DEFAULT_EMULATOR_CONFIG.port})`,
      parsePort,
    )
    .addHelpText(
      'after',
      examples(
        'pixelmill emulator --port 8787',
        'pixelmill emulator --config deploy/emulator.yaml --host 0.0.0.0',
        'PIXELMILL_API_BASE_URL=http://127.0.0.1:8787 pixelmill run manifests/demo.yaml',
      ),
    )
    .action(async (options: EmulatorOptions) => runEmulator(options));
}

async function runEmulator(options: EmulatorOptions): Promise<void> {
  const fromFile: EmulatorConfig = options.config
    ? loadEmulatorConfig(options.config)
    : DEFAULT_EMULATOR_CONFIG;
  const config = {
    ...fromFile,
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
  };
  const emulator = await startEmulator({ config });
  // Listening for the stop signals before saying it listens: whoever reads that line may stop it.
  const stopped = untilStopSignal();
  process.stdout.write(`pixelmill: emulator listening on ${emulator.url}\n`);
  process.stdout.write(`${describeKeys(emulator.config)}\n`);

  await stopped;
  await emulator.close();
  process.stdout.write('pixelmill: emulator stopped\n');
}

/**
 * The public demo key is printed so a first run works by copy and paste; keys from a config file
 * are secrets and only counted. Webhook secrets are never printed.
 */
function describeKeys(config: EmulatorConfig): string {
  const keys = config.accounts.flatMap((account) => account.keys);
  const demo = keys.find((key) => key.key === DEMO_API_KEY && key.status === 'active');
  const counted = `${config.accounts.length} account(s), ${keys.length} API key(s)`;
  return demo ? `${counted}; demo API key: ${DEMO_API_KEY}` : counted;
}
