// A submit to a provider that takes no idempotency key is unconfirmed from the moment it is sent
// until its task is journaled (submit-journal.ts): a worker that dies in between leaves a task
// nobody knows of, and the retry of its activity creates (and pays for) a second one. So a worker
// keeps at most UNCONFIRMED_SUBMITS such submits per provider account at once, and a worker killed
// costs at most that many duplicates. With 16 on the wire (a slice's SLICE_IN_FLIGHT), the chaos
// bench saw up to 3 duplicates a kill (BENCHMARKS.md, providers under chaos).
//
// The price is submits in series within a worker: one per round trip plus journal write. On the
// emulators that is hundreds a second; against a provider answering in 300 ms, about 3 a second per
// worker, which the submit lane needs only where tasks are short and the concurrency high (add
// workers). Providers that honour idempotency keys are not limited: their retries are safe.
import type { ProviderClient } from '../providers/types.js';
import { providerNamed } from '../providers/registry.js';
import type { PlanMeta } from '../runstate/index.js';
import { Slots, type Release } from '../common/slots.js';

export const UNCONFIRMED_SUBMITS = 1;

/** Releases an unconfirmed slot: call it once the submit's task is journaled, or its call failed. */
export type Confirmed = Release;

const slotsByClient = new WeakMap<ProviderClient, Slots>();
const noSlot: Confirmed = () => undefined;

/**
 * Waits until this worker may send one more submit whose outcome a crash would lose, for the
 * account of `client`; at once for a provider whose retried submits are safe.
 */
export function unconfirmedSlot(
  client: ProviderClient,
  meta: Pick<PlanMeta, 'provider'>,
): Promise<Confirmed> {
  if (providerNamed(meta.provider).capabilities.idempotencyKeys) return Promise.resolve(noSlot);
  let slots = slotsByClient.get(client);
  if (!slots) slotsByClient.set(client, (slots = new Slots(UNCONFIRMED_SUBMITS)));
  return slots.take();
}
