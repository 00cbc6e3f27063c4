// Keeps test output readable: the SDK logs every worker state change at INFO. Imported for its
// effect by the modules that start Temporal servers or workers in the test process, before they
// create the SDK's runtime; other test files skip loading the SDK's native bridge at all.
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process by an earlier test file.
}
