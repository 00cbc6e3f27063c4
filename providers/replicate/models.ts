// How a manifest names a Replicate model, and what pixelmill knows of the inputs of the models it
// maps best. A model is named three ways (predictions.create's `version` field): `owner/name`, an
// official model, run through POST /v1/models/{owner}/{name}/predictions; `owner/name:<version>`
// or a bare 64-hex version id, run through POST /v1/predictions with `version`.
//
// Inputs from the models' API pages (read 2026-11-26): black-forest-labs/flux-schnell,
// flux-dev and flux-1.1-pro (version 96ccd0e7). Any other model gets the inputs most of Replicate's
// image models share (`prompt`, `aspect_ratio`, `num_outputs`) and nothing pixelmill would guess.
import type { Resolution } from '../../common/generation.js';

export type ModelRef =
  | { kind: 'official'; owner: string; name: string }
  /** `version` as the manifest gave it (`owner/name:<id>` or `<id>`): the API takes both. */
  | { kind: 'version'; model?: string; version: string };

const NAME_PART = '[A-Za-z0-9][A-Za-z0-9._-]*';
const OFFICIAL = new RegExp(`^(${NAME_PART})/(${NAME_PART})$`);
const VERSIONED = new RegExp(`^(${NAME_PART}/${NAME_PART}):([0-9a-f]{64})$`);
const VERSION_ID = /^[0-9a-f]{64}$/;

/** The model reference of a manifest's `model`, or undefined when it names no Replicate model. */
export function parseModelRef(model: string): ModelRef | undefined {
  const official = OFFICIAL.exec(model);
  if (official) return { kind: 'official', owner: official[1]!, name: official[2]! };
  const versioned = VERSIONED.exec(model);
  if (versioned) return { kind: 'version', model: versioned[1]!, version: model };
  if (VERSION_ID.test(model)) return { kind: 'version', version: model };
  return undefined;
}

/** `owner/name` of a reference, when it names one. */
export function modelNameOf(ref: ModelRef): string | undefined {
  return ref.kind === 'official' ? `${ref.owner}/${ref.name}` : ref.model;
}

/** What pixelmill's mapping may set in a model's input. */
export interface ModelInputs {
  /** The `aspect_ratio` enum; undefined: any `W:H` is sent as it is (a model pixelmill does not know). */
  aspectRatios?: readonly string[];
  /** The `megapixels` value of each resolution the model makes; undefined: the model has no such input. */
  megapixels?: Partial<Record<Resolution, string>>;
  /** The resolutions the model makes (its default size is about 1 megapixel, 1K). */
  resolutions: readonly Resolution[];
  /** Most images one prediction makes (`num_outputs`); 1: the model has no such input. */
  maxOutputs: number;
  /** The input that takes one reference image, if the model has one. */
  imageInput?: string;
  /** Whether the mapping knows this model's inputs (from its API page) or assumes the common ones. */
  known: boolean;
}

const FLUX_RATIOS = ['1:1', '16:9', '21:9', '3:2', '2:3', '4:5', '5:4', '3:4', '4:3', '9:16', '9:21'];

export const MODEL_INPUTS: Readonly<Record<string, ModelInputs>> = {
  'black-forest-labs/flux-schnell': {
    aspectRatios: FLUX_RATIOS,
    megapixels: { '1K': '1' },
    resolutions: ['1K'],
    maxOutputs: 4,
    known: true,
  },
  'black-forest-labs/flux-dev': {
    aspectRatios: FLUX_RATIOS,
    megapixels: { '1K': '1' },
    resolutions: ['1K'],
    maxOutputs: 4,
    imageInput: 'image',
    known: true,
  },
  'black-forest-labs/flux-1.1-pro': {
    aspectRatios: ['1:1', '16:9', '3:2', '2:3', '4:5', '5:4', '9:16', '3:4', '4:3'],
    resolutions: ['1K'],
    maxOutputs: 1,
    imageInput: 'image_prompt',
    known: true,
  },
};

/** The inputs most Replicate image models share, for a model pixelmill has no page for. */
export const COMMON_INPUTS: ModelInputs = { resolutions: ['1K'], maxOutputs: 4, known: false };

export function modelInputs(ref: ModelRef): ModelInputs {
  const name = modelNameOf(ref);
  return (name !== undefined ? MODEL_INPUTS[name] : undefined) ?? COMMON_INPUTS;
}
