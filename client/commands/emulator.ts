// `pixelmill emulator [--provider P] [--config FILE] [--host H] [--port N]`: runs a provider's
// emulator in the foreground until SIGINT or SIGTERM, then closes it cleanly. Flags override the
// config file.
import type { Command } from 'commander';
import { DEFAULT_EMULATOR_CONFIG } from '../../emulator/index.js';
import {
  EMULATED_PROVIDERS,
  emulatorOf,
  isEmulatedProvider,
  type EmulatedProvider,
} from '../../emulator/providers.js';
import { UserError } from '../../common/errors.js';
import { untilStopSignal } from '../interrupt.js';
import { examples, parsePort } from './with-run.js';

interface EmulatorOptions {
  provider: string;
  config?: string;
  host?: string;
  port?: number;
}

export function registerEmulatorCommand(program: Command): void {
  program
    .command('emulator')
    .description("run a local emulator of a provider's API (docs/emulator.md, docs/emulators/)")
    .option('--provider <name>', `the provider to emulate: ${EMULATED_PROVIDERS.join(', ')}`, 'apimart')
    .option('--config <file>', "YAML config file of that provider's emulator (every field optional)")
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
        'pixelmill emulator --provider fal --port 8790',
        'pixelmill emulator --config deploy/emulator.yaml --host 0.0.0.0',
        'PIXELMILL_API_BASE_URL=http://127.0.0.1:8787 pixelmill run manifests/demo.yaml',
      ),
    )
    .action(async (options: EmulatorOptions) => runEmulator(options));
}

async function runEmulator(options: EmulatorOptions): Promise<void> {
  if (!isEmulatedProvider(options.provider)) {
    throw new UserError(
      'emulator_provider_unknown',
      `--provider ${options.provider} is not one pixelmill emulates: use ${EMULATED_PROVIDERS.join(', ')}`,
    );
  }
  const provider: EmulatedProvider = options.provider;
  const emulator = emulatorOf(provider);
  const fromFile = options.config ? (emulator.load(options.config) as Record<string, unknown>) : {};
  const config = {
    ...fromFile,
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.port !== undefined ? { port: options.port } : {}),
  };
  const running = await emulator.start({ config });
  // Listening for the stop signals before saying it listens: whoever reads that line may stop it.
  const stopped = untilStopSignal();
  process.stdout.write(`pixelmill: ${provider} emulator listening on ${running.url}\n`);
  process.stdout.write(`${describeKeys(running.config, emulator.demoKey)}\n`);

  await stopped;
  await running.close();
  process.stdout.write('pixelmill: emulator stopped\n');
}

/**
 * The public demo key is printed so a first run works by copy and paste; keys from a config file
 * are secrets and only counted. Webhook secrets are never printed.
 */
function describeKeys(config: unknown, demoKey: string): string {
  const keys = allKeys(config);
  const demo = keys.some((key) => key.key === demoKey && (key.status ?? 'active') === 'active');
  const accounts = (config as { accounts?: unknown } | null)?.accounts;
  const counted = `${Array.isArray(accounts) ? `${accounts.length} account(s), ` : ''}${keys.length} API key(s)`;
  return demo ? `${counted}; demo API key: ${demoKey}` : counted;
}

/**
 * Every key of a config, wherever the provider's config lists them: `{ key, status }` entries
 * (the first API, fal, BFL) or `tokens` lists (Replicate).
 */
function allKeys(value: unknown): { key: string; status?: string }[] {
  if (Array.isArray(value)) return value.flatMap(allKeys);
  if (typeof value !== 'object' || value === null) return [];
  const record = value as Record<string, unknown>;
  const own =
    typeof record.key === 'string' ? [{ key: record.key, status: record.status as string | undefined }] : [];
  const tokens = Array.isArray(record.tokens)
    ? record.tokens.filter((token): token is string => typeof token === 'string').map((key) => ({ key }))
    : [];
  const inner = Object.entries(record).flatMap(([name, field]) =>
    name === 'key' || name === 'tokens' ? [] : allKeys(field),
  );
  return [...own, ...tokens, ...inner];
}
