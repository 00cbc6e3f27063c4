// Ctrl-C in a CLI process that follows a run. The run is durable whatever happens here; what a
// Ctrl-C decides is how this process leaves: the first lets the activities its workers are
// running finish (a download cut off is only done again, but there is no need) and says what it
// waits for; a second leaves at once. Also the wait of a foreground server (`emulator`,
// `webhook-server`) for the signal that stops it.
import type { InFlightActivities } from '../worker/workers.js';
import { plural } from '../common/words.js';

export interface CtrlCHandlers {
  /** The first Ctrl-C (or a SIGTERM). */
  first(): void;
  /** Any later one. */
  again(): void;
}

/**
 * Installs the handlers. Once the returned function is called (the process is tidying up to
 * exit), any Ctrl-C leaves at once with 130, as a second one would.
 */
export function onCtrlC(handlers: CtrlCHandlers): () => void {
  let seen = 0;
  let tidying = false;
  const onSignal = (): void => {
    seen++;
    if (tidying) process.exit(130);
    if (seen === 1) handlers.first();
    else handlers.again();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    tidying = true;
  };
}

/** For a foreground server: resolves at the first SIGINT or SIGTERM, and stops listening then. */
export function untilStopSignal(): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** `4 downloads and 2 API calls`, or `nothing` when no activity runs. */
export function describeInFlight(inFlight: InFlightActivities): string {
  const parts = [
    inFlight.transfer > 0 ? plural(inFlight.transfer, 'download') : '',
    inFlight.api > 0 ? plural(inFlight.api, 'API call') : '',
    inFlight.bookkeeping > 0 ? plural(inFlight.bookkeeping, 'bookkeeping step') : '',
  ].filter(Boolean);
  if (parts.length === 0) return 'nothing';
  return parts.length === 1 ? parts[0]! : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
}
