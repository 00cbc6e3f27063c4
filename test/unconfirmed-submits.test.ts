// A worker keeps at most one submit whose task a crash would lose per account of a provider that
// takes no idempotency key, so a killed worker costs at most one duplicate; providers that honour
// keys are never held back.
import { describe, expect, it } from 'vitest';
import { UNCONFIRMED_SUBMITS, unconfirmedSlot } from '../activities/unconfirmed-submits.js';
import type { ProviderClient } from '../providers/types.js';

const client = (): ProviderClient => ({}) as ProviderClient;

/** Whether `promise` has settled after the microtasks queued so far have run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('unconfirmed submits', () => {
  it('holds a second submit to a provider without idempotency keys until the first is confirmed', async () => {
    expect(UNCONFIRMED_SUBMITS).toBe(1);
    const account = client();
    const first = await unconfirmedSlot(account, { provider: 'bfl' });
    const second = unconfirmedSlot(account, { provider: 'bfl' });
    const third = unconfirmedSlot(account, { provider: 'bfl' });
    expect(await settled(second)).toBe(false);
    first();
    // Released twice (a failed call's catch and its finally): still one slot, not two.
    first();
    expect(await settled(second)).toBe(true);
    expect(await settled(third)).toBe(false);
    (await second)();
    expect(await settled(third)).toBe(true);
  });

  it('keeps each account apart', async () => {
    const held = await unconfirmedSlot(client(), { provider: 'fal' });
    expect(await settled(unconfirmedSlot(client(), { provider: 'fal' }))).toBe(true);
    held();
  });

  it('never holds submits to a provider that honours idempotency keys', async () => {
    const account = client();
    await unconfirmedSlot(account, { provider: 'apimart' });
    expect(await settled(unconfirmedSlot(account, { provider: 'apimart' }))).toBe(true);
  });
});
