// Waiting in tests for something another process or worker makes true.

/**
 * Polls `check` every `intervalMs` until it returns a truthy value, and returns that value; fails
 * after `timeoutMs` with an error naming `what`.
 */
export async function waitUntil<T>(
  what: string,
  check: () => Promise<T> | T,
  timeoutMs = 120_000,
  intervalMs = 100,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
