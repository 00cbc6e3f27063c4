// What OpenAI charges, in US dollars: from each answer's token usage (what is billed), and before
// a run each item's expected price by its model, size, quality and n (what `plan` shows, at Batch
// and at sync rates, and what the budget holds back). Batch bills half of every token
// (BATCH_DISCOUNT). Prices: models.ts.
import type { ApiMode } from '../types.js';
import type { Usage } from './wire.js';
import { BATCH_DISCOUNT, DEFAULT_QUALITY, pricesOf, type Quality } from './models.js';

const rate = (mode: ApiMode | undefined): number => (mode === 'batch' ? BATCH_DISCOUNT : 1);
const cents = (dollars: number): number => Math.round(dollars * 1e6) / 1e6;

/** What a request's answer cost: its tokens at the model's rates (text and image input, image output). */
export function costOfUsage(model: string, usage: Usage | undefined, mode: ApiMode): number {
  if (!usage) return 0;
  const { tokens } = pricesOf(model);
  const imageInput = usage.input_tokens_details?.image_tokens ?? 0;
  const textInput =
    usage.input_tokens_details?.text_tokens ?? Math.max(0, (usage.input_tokens ?? 0) - imageInput);
  const dollars =
    (textInput * tokens.textInput +
      imageInput * tokens.imageInput +
      (usage.output_tokens ?? 0) * tokens.imageOutput) /
    1e6;
  return cents(dollars * rate(mode));
}

/** One image's price before it is made: by model, quality and shape (auto and `auto` quality priced as the dearest). */
export function imagePrice(
  item: { model: string; size: string; params?: Record<string, unknown> },
  mode: ApiMode | undefined,
): number {
  const { perImage } = pricesOf(item.model);
  const asked = item.params?.quality;
  const quality: Exclude<Quality, 'auto'> =
    asked === 'low' || asked === 'medium' || asked === 'high'
      ? asked
      : asked === 'auto'
        ? 'high'
        : (DEFAULT_QUALITY as 'medium');
  const table = item.size === '1:1' ? perImage.square : perImage.oblong;
  return cents(table[quality] * rate(mode));
}

/**
 * What one image of an item is expected to cost in `mode`: the manifest's `pricing` when it has
 * one (OpenAI's list price, as its pricing page gives it: Batch bills half of it), else the
 * documented price of the item's model, size and quality (imagePrice). The one estimate `plan`,
 * the budget and the shards' allowances use.
 */
export function imageCredits(
  item: { model: string; size: string; resolution?: string; params?: Record<string, unknown> },
  mode: ApiMode | undefined,
  perResolution?: Readonly<Record<string, number>>,
): number {
  // OpenAI makes 1K only (validate refuses the rest).
  if (perResolution) return cents((perResolution[item.resolution ?? '1K'] ?? 0) * rate(mode));
  return imagePrice(item, mode);
}

/** The run's default `creditsPerImage` (what a run records; each item is priced by imageCredits): a medium square image. */
export function defaultCreditsPerImage(mode: ApiMode | undefined): Record<string, number> {
  const price = imagePrice({ model: '', size: '1:1' }, mode);
  return { '1K': price, '2K': price, '4K': price };
}

/** `plan`'s line: the run's images at Batch and at sync prices, each item priced as imageCredits prices it. */
export function priceBothWays(
  items: readonly {
    model: string;
    size: string;
    resolution?: string;
    n: number;
    params?: Record<string, unknown>;
  }[],
  perResolution?: Readonly<Record<string, number>>,
): { batch: number; sync: number } {
  let batch = 0;
  let sync = 0;
  for (const item of items) {
    batch += item.n * imageCredits(item, 'batch', perResolution);
    sync += item.n * imageCredits(item, 'sync', perResolution);
  }
  return { batch: Math.round(batch * 100) / 100, sync: Math.round(sync * 100) / 100 };
}
