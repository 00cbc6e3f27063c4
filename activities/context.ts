// The running activity's context, for the code that heartbeats or honours cancellation.
import { Context } from '@temporalio/activity';

/** The running activity's context; undefined outside a worker (a script, a unit test). */
export function activityContext(): Context | undefined {
  try {
    return Context.current();
  } catch {
    // Called outside a worker (a script, a unit test): no heartbeats, no cancellation.
    return undefined;
  }
}
