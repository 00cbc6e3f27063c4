// The providers by name: the one place that lists them. Everything else asks for a provider by the
// name a run's plan records and then uses only the interface (types.ts).
import { apimart } from './apimart/index.js';
import { bfl } from './bfl/index.js';
import { fal } from './fal/index.js';
import { openai } from './openai/index.js';
import { replicate } from './replicate/index.js';
import { DEFAULT_PROVIDER, PROVIDER_NAMES, type ImageProvider, type ProviderName } from './types.js';

const PROVIDERS: Record<ProviderName, ImageProvider> = { apimart, bfl, fal, openai, replicate };

export function isProviderName(name: string): name is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(name);
}

/** The provider a run names (the default when it names none). */
export function providerNamed(name: ProviderName | undefined): ImageProvider {
  return PROVIDERS[name ?? DEFAULT_PROVIDER];
}
