// What a task costs, in BFL credits (1 credit = $0.01), as the submit answer's `cost` reports it.
//
// FLUX.1 models cost a flat amount per image (docs.bfl.ml/quick_start/pricing). FLUX.2 models are
// priced by megapixel: the first output megapixel at one rate, each further one (started
// megapixels count whole) and each input megapixel at another. A flux-2-pro answer seen in the
// wild, 1.98 output MP for 4.5 credits (3 + 1 x 1.5), agrees with counting started megapixels.
import type { BflModelConfig } from './config.js';
import { megapixels, type ImageSize } from './models.js';

export interface Price {
  cost: number;
  /** Megapixels in and out, as the answer reports them (two decimals). */
  inputMp: number;
  outputMp: number;
}

/** Rounds away binary noise (1.4 + 0.1 * 3 is 1.7000000000000002). */
const credits = (n: number): number => Math.round(n * 100) / 100;

export function priceOf(
  cost: BflModelConfig['cost'],
  output: ImageSize,
  inputImages: number,
  inputMpPerImage: number,
): Price {
  const outputMp = megapixels(output);
  const inputMp = credits(inputImages * inputMpPerImage);
  if (typeof cost === 'number') return { cost, inputMp, outputMp };
  const extra = Math.ceil(Math.max(0, outputMp - 1));
  return {
    cost: credits(cost.first_mp + extra * cost.extra_mp + Math.ceil(inputMp) * cost.input_mp),
    inputMp,
    outputMp,
  };
}
