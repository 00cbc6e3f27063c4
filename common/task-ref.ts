// pixelmill's reference to a task at a provider: the provider's own id, then `|` and what a
// client needs to reach the task again when the id alone does not say (fal's request path, BFL's
// polling URL). Plain string functions: workflows import them to match webhooks (which name the
// id) with the references they hold.

/** The provider's own id of a task, from pixelmill's reference to it. */
export function taskIdOf(ref: string): string {
  const bar = ref.indexOf('|');
  return bar === -1 ? ref : ref.slice(0, bar);
}

/** What follows the id in a task reference: the provider's locator, or undefined. */
export function locatorOf(ref: string): string | undefined {
  const bar = ref.indexOf('|');
  return bar === -1 ? undefined : ref.slice(bar + 1);
}

/** A task reference from the id and, when needed, the locator. Ids never hold `|`. */
export function taskRef(id: string, locator?: string): string {
  return locator === undefined ? id : `${id}|${locator}`;
}
