// What each manifest field means, keyed by its path in the JSON Schema (`a.b`, `items[].c`).
// Kept beside the zod schema rather than inside it so the validator stays readable; the JSON
// Schema (for editors) and docs/manifest.md (for people) both take their descriptions from here,
// and a test fails when a field has none.
import { LANGUAGES, MAX_IMAGE_URLS, RESOLUTIONS } from '../common/generation.js';
import { MEGAPIXELS } from '../providers/mapping.js';
import { providerNamed } from '../providers/registry.js';
import { DEFAULT_PROVIDER, PROVIDER_NAMES } from '../providers/types.js';
import { DEFAULT_CREDITS_PER_IMAGE } from '../runstate/plan.js';
import {
  ASPECT_TOLERANCE,
  BLANK_MAX_STDEV,
  DEFAULT_CHECK_LEVELS,
  LONG_SIDE_TOLERANCE,
} from '../checks/image-checks.js';
import { DEFAULTS } from './normalize.js';
import { DEFAULT_NOTIFY_EVENTS } from '../common/notify-types.js';
import { MAX_REFERENCE_BYTES } from './references.js';
import { DEFAULT_PATH_TEMPLATE, MAX_PROMPT_CHARS, PATH_TEMPLATE_FIELDS } from './schema.js';

const placeholders = PATH_TEMPLATE_FIELDS.map((field) => `{${field}}`).join(', ');
const providers = PROVIDER_NAMES.map((name) => `\`${name}\``).join(', ');
const defaultModels = PROVIDER_NAMES.map((name) => `${name} \`${providerNamed(name).defaultModel}\``).join(
  ', ',
);
const tierMegapixels = RESOLUTIONS.map((r) => `${r} ${MEGAPIXELS[r]}`).join(', ');

const PARAMS = `The provider's own input fields, passed through as they are after pixelmill's mapping of \`prompt\`, \`size\`, \`resolution\`, \`n\`, \`image_urls\` and \`language\`; a key that mapping sets is refused (set the pixelmill field instead). \`apimart\`: into the request body (the API ignores what it does not know). \`fal\`: into the model's input (\`seed\`, \`output_format\`, \`guidance_scale\`, \`enable_safety_checker\`, ...; \`sync_mode: true\` is refused); with \`size: auto\`, \`image_size\` is yours to give. \`replicate\`: into the prediction's \`input\` (the model's own inputs: \`seed\`, \`output_format\`, \`go_fast\`, ...). \`bfl\`: into the request body (\`seed\`, \`safety_tolerance\`, \`output_format\`, \`prompt_upsampling\`, \`raw\`, ...; \`webhook_url\` and \`webhook_secret\` come from \`webhooks\`); with \`size: auto\`, \`width\`/\`height\` are yours. docs/providers.md says what each maps. `;

const TEMPLATE = `Makes the prompt: \`{column}\` placeholders are filled with the item's fields (\`{id}\`, \`{prompt}\`, \`{model}\`, \`{size}\`, \`{resolution}\`, \`{n}\`, \`{language}\`, as the output resolves them), its variables (the other columns of its CSV or JSONL row, its \`variables\`), its variant's \`variables\` and \`{variant}\` (the variant's id); \`{{\` and \`}}\` are literal braces. The first template of the item, its variant and \`defaults\` is used, and \`{prompt}\` in it is the item's own prompt; the rendered text is what the provider gets, what the gallery shows and what decides whether an incremental run generates the output again. \`validate\` refuses, at file:line:col, a placeholder that no field, column or variable has, one an item has no value for (said once at the template when no item has one), and a template that renders empty. `;

const itemParams = (prefix: string, inherits: string): Record<string, string> => ({
  [`${prefix}prompt_template`]: `${TEMPLATE}${inherits}`,
  [`${prefix}model`]: `The provider's own model name (fal \`fal-ai/flux/dev\`; Replicate \`owner/name\` or \`owner/name:version\`; BFL \`flux-pro-1.1\`). ${inherits}Default: the provider's, ${defaultModels}.`,
  [`${prefix}size`]: `Aspect ratio such as \`16:9\` or \`3:4\`, or \`auto\`. ${inherits}Default: \`${DEFAULTS.size}\`.`,
  [`${prefix}resolution`]: `\`1K\`, \`2K\` or \`4K\`: the image's long side, 1024, 2048 or 4096 px, as pixelmill asks it of every provider that takes a size (Replicate's FLUX takes megapixels instead: a megapixel at 1K, at any ratio); the price grows with it. ${inherits}Default: \`${DEFAULTS.resolution}\`.`,
  [`${prefix}n`]: `Images per prompt, 1-10. ${inherits}Default: ${DEFAULTS.n}.`,
  [`${prefix}image_urls`]: `Up to ${MAX_IMAGE_URLS} reference images for image-to-image: http(s) URLs, or local files and globs (\`photos/chair.jpg\`, \`photos/chair-*.png\`) relative to the manifest, PNG, JPEG, WebP or GIF, at most ${MAX_REFERENCE_BYTES / 1048576} MiB each, at most ${MAX_IMAGE_URLS} once globs are expanded. An entry may name the item's columns as a prompt_template does (\`photos/{sku}.jpg\`; a brace group with a comma, \`{1,2}\`, stays a glob's); each item's files are checked when the manifest loads. Local files are uploaded once to the run's store and passed to the provider as URLs (docs/references.md). ${inherits}`,
  [`${prefix}language`]: `Language of the API's error messages: ${LANGUAGES.join(', ')} (\`apimart\` only: fal, Replicate and BFL have none, and \`validate\` refuses it). ${inherits}`,
  [`${prefix}params`]: `${PARAMS}${
    inherits === ''
      ? 'Every item takes them; a problem one of them causes is reported once, here.'
      : prefix === 'variants[].'
        ? "Merged over `defaults.params` key by key, and the item's own over these."
        : "Merged over `defaults.params` (and its variant's) key by key: a key the item sets wins, the others are kept."
  }`,
});

export const FIELD_DOCS: Record<string, string> = {
  name: "The run's name: its Temporal workflow id is `pixelmill/<name>`, so running the same manifest again attaches to the same run. Letters, digits, `.`, `_`, `-`; at most 80 characters.",
  description: 'Free text for people; not used by the run.',
  api: "Which image API the run drives and where it is. `PIXELMILL_API_BASE_URL` and `PIXELMILL_API_KEY` in the environment take precedence. Without any base URL, `pixelmill run` uses the provider's built-in emulator (the run is labelled emulated).",
  'api.provider': `The image API the run drives: ${providers}. \`apimart\` is the asynchronous task API pixelmill first drove, \`fal\` fal's queue, \`replicate\` Replicate's predictions, \`bfl\` Black Forest Labs' FLUX API, \`openai\` OpenAI's Images API (Batch or sync: \`api.mode\`). It decides what \`model\`, \`params\` and the other item fields become in the request, and what \`validate\` refuses as the provider cannot express it (docs/providers.md). Without a base URL, \`pixelmill run\` starts this provider's emulator (labelled emulated). Default: \`${DEFAULT_PROVIDER}\`.`,
  'api.base_url':
    "Base URL of the provider's API (or of an emulator of it), e.g. `https://api.example.com`. Default: none, and `pixelmill run` starts the provider's built-in emulator.",
  'api.mode':
    "How an OpenAI run submits: `batch` (OpenAI's Batch API: a file of up to 500 requests per batch, results within 24 h, at half the price) or `sync` (one held call per item, images in seconds). Only for `provider: openai`. Default: `batch` when the run generates more than 50 items, else `sync` (`plan` says which and why).",
  'api.max_enqueued_images':
    "Batch mode: at most this many images waiting in the account's batches at once (OpenAI limits the tokens a model may have enqueued): new batches wait for earlier ones to finish. Default: 5000 (ten batches of 500 one-image items).",
  'api.retry_in':
    'Batch mode: where items a batch did not finish (an expired batch, retryable failures) are generated again: `batch` (a new batch, at batch prices) or `sync` (held calls, at once). Default: `batch`.',
  'api.poll_interval':
    "Batch mode: the wait before a batch's first status call; each wait after is half as long again, up to 20 times this (at most 10 minutes). Default: the first call after `2s`, the waits growing up to 10 minutes (a batch of an hour: about 19 calls).",
  'api.api_key_env': `The *name* of the environment variable that holds the API key (never the key itself). Default: \`${DEFAULTS.apiKeyEnv}\`.`,
  defaults: 'Generation parameters every item inherits unless it sets its own.',
  ...itemParams('defaults.', ''),
  limits: 'How fast and how far the run may go.',
  'limits.requests_per_second':
    'Every API call of the run together (submits, batch lookups, task GETs), across all workers; result downloads are not API calls. `auto` (the default): pixelmill discovers what the provider admits, per endpoint group, from its answers (429 and Retry-After), shared fairly by every run and worker of the same API key. A number alone is a fixed rate, used as given; beside `submits_per_second` or `queries_per_second` it is a cap on the discovered rates.',
  'limits.submits_per_second':
    'A cap on the rate of submits (the model API), below the discovered rate: a number, or `auto` (no cap). Default: `auto`.',
  'limits.queries_per_second':
    'A cap on the rate of batch lookups and task GETs (the platform API), below the discovered rate: a number, or `auto` (no cap). Default: `auto`.',
  'limits.max_in_flight': `Most items submitted and not yet finished at any moment. Default: ${DEFAULTS.maxInFlight}.`,
  'limits.task_timeout': `How long a task may stay unfinished at the API (pending, processing, or a status pixelmill does not know) before it is given up: a duration such as \`90s\`, \`30m\`, \`2h\`, at least 10s. The item fails with \`task_timeout\`, which the default retry policy resubmits. Default: \`30m\`.`,
  'limits.deadline':
    'When the run must end: a duration from its start (`8h`) or a time (`2026-11-24T08:00:00+01:00`). Then nothing more is submitted; tasks already at the API are still collected (up to `task_timeout`); the run ends with its report, every unfinished item `cancelled` with the code `deadline`, and `pixelmill run` exits with 4. `pixelmill retry-failed RUN` continues those items later. Default: none.',
  'limits.budget_credits':
    "Stop submitting once the credits charged plus the cost of the next submit would exceed this; the rest is reported `skipped` with the reason. Charged: the cost the provider reports, or where it reports none the `pricing` estimate. A number in the provider's unit, cents allowed (`40`, `12.50`, no currency sign): US dollars for `openai`, BFL credits ($0.01) for `bfl`, credits for `apimart`, the unit of `pricing` for `fal` and `replicate`. Default: no budget.",
  output: `Where images, \`report.jsonl\`, \`summary.json\` and \`index.html\` go: a directory (relative to the manifest) or an \`s3://bucket/prefix\` URL as a string, or an object. Default: \`out/<name>\`.`,
  'output.dir':
    'The output directory, relative to the manifest file unless absolute; or `s3://bucket/prefix` for an S3-compatible object store (docs/storage.md), whose credentials come from the standard AWS environment or profile, never from the manifest.',
  'output.endpoint':
    'S3 output only: the endpoint of an S3-compatible store, e.g. `http://127.0.0.1:9000`. Default: AWS, or `AWS_ENDPOINT_URL_S3` / `AWS_ENDPOINT_URL`.',
  'output.region':
    "S3 output only: the bucket's region. Default: `AWS_REGION`, the AWS profile's, or `us-east-1` with a custom endpoint.",
  'output.force_path_style':
    'S3 output only: address the bucket in the path (`http://host/bucket/key`) rather than the host name; most S3-compatible servers need it. Default: false.',
  'output.local_dir':
    "S3 output only: where the CLI keeps `retry-failed`'s records of the run (the run's plan, state and report are in the bucket, under `<prefix>/.pixelmill/` and `<prefix>/`), relative to the manifest unless absolute. Default: `.pixelmill/s3/<bucket>/<prefix>` beside the manifest.",
  'output.allow_non_empty':
    'Write into a local output folder that already holds other files (not an earlier pixelmill output). Default: `false`, so that a mistyped folder is refused before anything is spent; `pixelmill run --force` does the same for one run.',
  'output.public_url':
    "Local output only: the base URL at which the provider can fetch this output's `.pixelmill/references/` folder (where the CLI copies the items' local reference images), served by you; `PIXELMILL_PUBLIC_URL` on the workers does the same for every run. Not needed for an s3:// output (presigned URLs) or an embedded run (pixelmill serves them itself).",
  'output.path_template': `Path of each image inside the output directory, with the placeholders ${placeholders}; must contain {id} and {index}; {variant} (the variant's id) only in a manifest with \`variants\`. Default: \`${DEFAULT_PATH_TEMPLATE}\`.`,
  retry: 'Which failed generations are submitted again.',
  'retry.max_attempts': `Most submissions of one item, the first included. Default: ${DEFAULTS.retryMaxAttempts}.`,
  'retry.on': `Error types or codes of failed tasks (from the API's task \`error\`) worth another attempt. Default: ${DEFAULTS.retryOn.map((type) => `\`${type}\``).join(', ')}.`,
  checks: `How each stored image is checked (decoded with libvips): \`error\` fails the item (with the type \`ImageCheckFailed\` and the code \`check_<name>\`, which \`retry.on\` may list to generate it again), \`warn\` keeps it and says so in the report, \`off\` skips the check. Tolerances: docs/checks.md.`,
  'checks.decodes': `The file decodes as an image, whole (a truncated or corrupt download fails). Default: \`${DEFAULT_CHECK_LEVELS.decodes}\`.`,
  'checks.format': `The image is in the format the result host announced (a JPEG sent as a PNG). Default: \`${DEFAULT_CHECK_LEVELS.format}\`.`,
  'checks.aspect_ratio': `Width / height is the item's \`size\`, within ${ASPECT_TOLERANCE * 100}%. Default: \`${DEFAULT_CHECK_LEVELS.aspect_ratio}\`.`,
  'checks.resolution': `The long side, or the square root of the pixel count (a provider that sizes by megapixels), is the item's \`resolution\` tier (1024, 2048, 4096 px), within ${LONG_SIDE_TOLERANCE * 100}%. Default: \`${DEFAULT_CHECK_LEVELS.resolution}\`.`,
  'checks.blank': `The image is not blank: some channel's pixels vary by at least ${BLANK_MAX_STDEV} (standard deviation, 0-255). Default: \`${DEFAULT_CHECK_LEVELS.blank}\`.`,
  webhooks:
    'Terminal-state webhooks: the API tells the run when a task finishes, so the run skips most lookups and GETs and polls only as a safety net (3x slower). `pixelmill run` receives them itself in embedded mode; with a Temporal cluster run `pixelmill webhook-server`.',
  'webhooks.enabled': 'Set `false` to keep the block but turn webhooks off. Default: `true`.',
  'webhooks.public_url':
    'Address at which the API reaches the receiver (`PIXELMILL_WEBHOOK_URL` takes precedence); the API posts to `<public_url>/hooks/<shard>/callback`. Required with a Temporal cluster; in embedded mode the default is the local receiver.',
  'webhooks.secret_env': `The *name* of the environment variable that holds the account's webhook secret (never the secret itself). Default: \`${DEFAULTS.webhookSecretEnv}\`.`,
  notify:
    'Where the run sends a message when it ends or needs a person: one JSON POST per entry whose `on` matches, in the shape Slack incoming webhooks (and Mattermost, Rocket.Chat, ...) take: run, counts, credits, the reason, links to the Temporal UI and the report. Sent by the workers, with a few retries over a few minutes; a message not delivered is recorded in `summary.json` (`notifications`) and never fails the run. See docs/nightly-runs.md.',
  'notify[]': 'One receiver.',
  'notify[].url_env':
    'The *name* of the environment variable that holds the receiver URL on the workers (e.g. `SLACK_WEBHOOK_URL`), never the URL itself: such URLs are secrets.',
  'notify[].on': `When to send: \`completed\` (every item completed), \`failed\` (items failed or expired, the run failed, or a scheduled firing could not read a valid manifest), \`paused\` (the API refused the key or the credits, 401/402/403: the run waits for \`pixelmill resume\`), \`deadline\` (limits.deadline ended it with items undone), \`budget\` (limits.budget_credits left items unsubmitted). Default: \`[${DEFAULT_NOTIFY_EVENTS.join(', ')}]\`.`,
  pricing: `What an image costs, in the unit of \`limits.budget_credits\`: exactly one of \`per_image\` and \`per_megapixel\`. \`pixelmill plan\` and the budget estimate each task with it until its cost is known. Where the provider reports no cost (\`fal\`, \`replicate\`), the estimate is what a completed task is charged: the budget counts it, the report's credits are it, and \`summary.json\` says \`credits_estimated: true\`. Where the provider reports a cost (\`apimart\`; \`bfl\`, in BFL credits of $0.01: price in those; \`openai\`, in US dollars), that cost is charged. For \`openai\` it is the list price of an image, as OpenAI's pricing page gives it, Batch estimated at half of it; without it each item is priced by its model, size, \`params.quality\` and \`n\` from OpenAI's documented prices. Default (credits an image): ${RESOLUTIONS.map((r) => `${r} ${DEFAULT_CREDITS_PER_IMAGE[r]}`).join(', ')}.`,
  'pricing.per_image':
    'The price of one image: one number for every resolution (`0.003`), or one per resolution (`{ 1K: 0.03, 2K: 0.06, 4K: 0.12 }`, all three). An item costs `n` times it.',
  'pricing.per_image.1K': 'The price of one 1K image.',
  'pricing.per_image.2K': 'The price of one 2K image.',
  'pricing.per_image.4K': 'The price of one 4K image.',
  'pricing.per_megapixel': `The price of one megapixel of output (fal bills its FLUX models so). An image is counted at its tier's square size: ${tierMegapixels} megapixels, so a wider ratio is estimated above what it is billed.`,
  variants:
    "Named blocks applied to the items: each (item, variant) pair the variant selects is one output, with the id `<item id>-<variant id>` (an item without an id gets one derived from its fields and variables), in manifest order, item by item. An output takes each parameter from its item, else its variant, else `defaults`; its prompt from the first `prompt_template` of those. Report lines carry `product`, `variant` and `variables`; `pixelmill plan` counts each variant's outputs to generate, and an edited variant regenerates exactly the outputs whose prompts or parameters it changes.",
  'variants[].id':
    "The variant's name: the end of its outputs' ids and `{variant}` in templates and `output.path_template`. Unique among the variants; an output id it makes that another item and variant also make is refused.",
  ...itemParams('variants[].', "Overrides `defaults`; the item's own value overrides it. "),
  'variants[].variables':
    "Values the templates may name (`{style}`), for this variant's outputs; an item's own variable of the same name wins. Text, numbers or true/false. Report lines' `variables` are the item's own, the same for each of its variants.",
  'variants[].where':
    "The items the variant applies to: a mapping of column (an item field such as `size`, or a variable: a column of the items file, an inline item's `variables`) to the value the item must have there, or a list of values it may have (`where: { category: [chair, table], finish: oak }`). Every column must match; an item without a value for one is not selected. Values are compared as text. Default: every item.",
  items: 'The prompts, inline. Use `items_file` instead for large catalogs.',
  'items[].variables':
    'Values the templates may name (`{colour}`), and `where` may select by: what the other columns of an items_file row are. Text, numbers or true/false; a name that is an item field is refused.',
  'items[].id':
    'Stable item id: used in file names and the report. Default: derived from the prompt and parameters, so it stays the same across runs. Ids must be unique.',
  'items[].prompt': `The prompt text, at most ${MAX_PROMPT_CHARS} characters. Required unless a \`prompt_template\` (the item's, its variant's or the defaults') makes the prompt; then \`{prompt}\` in the template is this text.`,
  ...itemParams('items[].', 'Overrides `defaults`. '),
  items_file:
    "A CSV (with a header row) or JSONL file of items, relative to the manifest: the same fields as `items`. Any other column (or JSONL key) is a variable of its item, for templates, `where` and the gallery's search; one whose name is close to a field's (`promt`) is refused as a misspelling unless a template or a `where` names it. An empty cell is no value. A CSV `image_urls` cell lists its entries separated by spaces or `|`; local paths in it are relative to the manifest.",
};
