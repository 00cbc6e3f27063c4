// pixelmill's own generation vocabulary, the manifest's words for what an item asks for. Each
// provider maps them onto its fields (providers/*/request.ts) and says what it cannot express.

/** Quality tiers: about 1, 4 and 16 megapixels (the first API's `resolution`). */
export const RESOLUTIONS = ['1K', '2K', '4K'] as const;
export type Resolution = (typeof RESOLUTIONS)[number];
/**
 * The long side of each tier, px: what providers that take pixel sizes are asked for
 * (providers/mapping.ts) and what the image checks expect (checks/image-checks.ts).
 */
export const LONG_SIDE: Readonly<Record<string, number>> = { '1K': 1024, '2K': 2048, '4K': 4096 };

/** Error-text languages an item may ask for (the first API's `language`). */
export const LANGUAGES = ['en', 'zh', 'ko', 'ja'] as const;
export type Language = (typeof LANGUAGES)[number];

/** Reference images an item may name (the most any provider here takes); a provider may take fewer (its mapping says so). */
export const MAX_IMAGE_URLS = 15;
