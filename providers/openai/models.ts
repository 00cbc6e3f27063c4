// What pixelmill knows of OpenAI's GPT image models: which names are image models, the sizes
// the Images API makes, and their prices (developers.openai.com, read 2026-11-27; sources in
// docs/providers.md#openai). gpt-image-1 was shut down on 2026-10-23, so the default is
// gpt-image-1.5; a model pixelmill has no prices for is priced as gpt-image-1.5 (plan says so).

/** The model an item without one uses. */
export const DEFAULT_MODEL = 'gpt-image-1.5';

/** GPT image models (`gpt-image-1.5`, `gpt-image-2-2026-04-21`, `chatgpt-image-latest`...). */
export const IMAGE_MODEL = /^(gpt-image-[a-z0-9.-]+|chatgpt-image-latest)$/;

/** DALL·E models were retired on 2026-05-12: named, they are refused with the reason. */
export const RETIRED_MODEL = /^dall-e-[23]$/;

/** The Images API's sizes, by pixelmill's aspect ratio (its only three, besides `auto`). */
export const SIZE_OF_RATIO: Readonly<Record<string, string>> = {
  '1:1': '1024x1024',
  '3:2': '1536x1024',
  '2:3': '1024x1536',
};

export const QUALITIES = ['low', 'medium', 'high', 'auto'] as const;
export type Quality = (typeof QUALITIES)[number];
/**
 * Sent when `params.quality` says nothing, so that what `plan` prices is what is billed (the API's
 * own default, `auto`, picks a quality per prompt).
 */
export const DEFAULT_QUALITY: Quality = 'medium';

/** Images per request (`n`). */
export const MAX_IMAGES = 10;

/** US dollars per million tokens, at synchronous rates; Batch bills half (BATCH_DISCOUNT). */
export interface TokenRates {
  textInput: number;
  imageInput: number;
  imageOutput: number;
}

/** US dollars per image at synchronous rates: a square image, and a portrait or landscape one. */
export interface ImagePrices {
  square: Record<Exclude<Quality, 'auto'>, number>;
  oblong: Record<Exclude<Quality, 'auto'>, number>;
}

export interface ModelPrices {
  tokens: TokenRates;
  perImage: ImagePrices;
}

/** "Batch API: save 50% on inputs and outputs". */
export const BATCH_DISCOUNT = 0.5;

export const PRICES: Readonly<Record<string, ModelPrices>> = {
  'gpt-image-1.5': {
    tokens: { textInput: 5, imageInput: 8, imageOutput: 32 },
    perImage: {
      square: { low: 0.009, medium: 0.034, high: 0.133 },
      oblong: { low: 0.013, medium: 0.05, high: 0.2 },
    },
  },
  'gpt-image-1-mini': {
    tokens: { textInput: 2, imageInput: 2.5, imageOutput: 8 },
    perImage: {
      square: { low: 0.005, medium: 0.011, high: 0.036 },
      oblong: { low: 0.006, medium: 0.015, high: 0.052 },
    },
  },
  'gpt-image-1': {
    tokens: { textInput: 5, imageInput: 10, imageOutput: 40 },
    perImage: {
      square: { low: 0.011, medium: 0.042, high: 0.167 },
      oblong: { low: 0.016, medium: 0.063, high: 0.25 },
    },
  },
};

/** A model's prices: its own, else gpt-image-1.5's (a newer model's are not in pixelmill's table). */
export function pricesOf(model: string): ModelPrices {
  return PRICES[model] ?? PRICES[DEFAULT_MODEL]!;
}
