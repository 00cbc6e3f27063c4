// What the commands on an existing run share: the RUN argument, a session around the action, the
// shape of their help text.
import { InvalidArgumentError, type Command } from 'commander';
import type { LoadedManifest } from '../../manifest/load.js';
import { requireRun, resolveRun, type RunArgument } from '../runs.js';
import { openSession, type Session } from '../session.js';

export const RUN_ARGUMENT = [
  '<run>',
  'the manifest file, the run id (pixelmill/<name>) or the manifest name',
] as const;

/**
 * Opens a session, checks the run exists, runs `body`, closes the session. `body` gets the manifest
 * too when RUN named its file, so that the command does not parse it again.
 */
export async function withRun<T>(
  run: string | RunArgument,
  body: (session: Session, runId: string, manifest: LoadedManifest | undefined) => Promise<T>,
  options: { log?: (line: string) => void } = {},
): Promise<T> {
  const { runId, manifest } = typeof run === 'string' ? resolveRun(run) : run;
  const session = await openSession(options.log ? { log: options.log } : {});
  try {
    await requireRun(session.client, runId);
    return await body(session, runId, manifest);
  } finally {
    await session.close();
  }
}

/** Local time as `YYYY-MM-DD HH:MM:SS`. */
export function localTime(date: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ` +
    `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`
  );
}

/** A --port option's value: 0 (any free port) to 65535. */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535)
    throw new InvalidArgumentError('expected a port number from 0 to 65535');
  return port;
}

// In a module of its own, for the short commands (validate, plan), which load nothing of this one.
export { examples } from './examples.js';

export function isDebug(command: Command): boolean {
  return Boolean(command.optsWithGlobals<{ debug?: boolean }>().debug);
}
