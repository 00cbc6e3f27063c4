// The output and error files of an ended batch, generated line by line as they are read, never held
// whole: a line is JSON text around each image's base64, encoded from the image's parts in slices.
// Lines come in no particular order (a permutation seeded by the batch), the same on every read,
// so a file served twice is byte-identical and `Range: bytes=N-` can resume a cut download. A
// line's length is known once it has been served whole, or counted (rendering its images, which
// are then cached): a first download starts at once and is sent chunked, without a length; the
// file's `bytes` and a Range request count whatever lines are not known yet.
//
// Output lines: {"id":"batch_req_…","custom_id":…,"response":{"status_code":200,"request_id":…,
// "body":{"created":…,"background":…,"data":[{"b64_json":"…"}],"output_format":…,"quality":…,
// "size":…,"usage":{…}}},"error":null}. Error lines: a request that ran and failed carries its
// status and error body in `response`; one that never ran has `response: null` and `error`
// {code: batch_expired | batch_cancelled, message}.
import { randomStream } from '../core/index.js';
import { endOf, ran, type BatchRecord, type PlannedRequest } from './batches.js';
import type { BatchFile } from './files.js';
import { seedOf } from './ids.js';
import { usageOf } from './image-request.js';
import type { ImageSource } from './images.js';

/** Raw bytes per base64 slice: a multiple of 3, so that slices concatenate into one encoding. */
const SLICE_BYTES = 3 * 21_846;

/** The base64 an undecodable line's images carry: valid base64, no image format's bytes. */
const NOT_AN_IMAGE = Buffer.from('these bytes are not an image').toString('base64');

/** A piece of a line: text, or an image to encode. */
type Piece = string | { request: PlannedRequest; index: number };

export class BatchFileContent {
  /** Each line's length in bytes once known (NaN until then): counted, or recorded as it was served. */
  readonly #lengths: Float64Array;
  #unknown: number;
  #offsets: Promise<Float64Array> | undefined;
  readonly #order: number[];

  constructor(
    readonly file: BatchFile,
    private readonly batch: BatchRecord,
    private readonly images: ImageSource,
    seed: number,
  ) {
    const end = endOf(batch);
    const wanted = (r: PlannedRequest): boolean =>
      file.kind === 'output' ? r.ok && ran(r, end) : !(r.ok && ran(r, end));
    const order: number[] = [];
    batch.requests.forEach((r, i) => {
      if (wanted(r)) order.push(i);
    });
    // Fisher-Yates with the file's own stream: "in no particular order", and the same every time.
    const random = randomStream(seedOf(seed, batch.id, file.kind, 'order'), 0);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    this.#order = order;
    this.#lengths = new Float64Array(order.length).fill(Number.NaN);
    this.#unknown = order.length;
  }

  get lines(): number {
    return this.#order.length;
  }

  /** The size when every line's length is known already (served once, or counted); else undefined. */
  knownSize(): number | undefined {
    if (this.#unknown > 0) return undefined;
    let total = 0;
    for (const length of this.#lengths) total += length;
    return total;
  }

  /** The file's size in bytes, counting the lines not yet known (rendering their images). */
  async size(): Promise<number> {
    const offsets = await this.offsets();
    return offsets[offsets.length - 1]!;
  }

  /** Byte offset of each line's start, and the total at the end. */
  offsets(): Promise<Float64Array> {
    this.#offsets ??= (async () => {
      const offsets = new Float64Array(this.#order.length + 1);
      for (let i = 0; i < this.#order.length; i++) {
        if (Number.isNaN(this.#lengths[i]!)) this.#record(i, await this.#lineLength(i));
        offsets[i + 1] = offsets[i]! + this.#lengths[i]!;
      }
      return offsets;
    })();
    return this.#offsets;
  }

  /** The line that holds byte `offset`, and where it starts. */
  async lineAt(offset: number): Promise<{ line: number; start: number }> {
    const offsets = await this.offsets();
    let lo = 0;
    let hi = this.#order.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offsets[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo, start: offsets[lo]! };
  }

  /** Line `line` as chunks, from its first byte; a line read to its end has its length recorded. */
  async *lineChunks(line: number): AsyncGenerator<Buffer> {
    let length = 0;
    for (const piece of this.#pieces(line)) {
      if (typeof piece === 'string') {
        const chunk = Buffer.from(piece);
        length += chunk.length;
        yield chunk;
        continue;
      }
      const { parts } = await this.images.get(piece.request.request!, piece.index);
      for (const slice of base64Slices(parts)) {
        length += slice.length;
        yield Buffer.from(slice, 'latin1');
      }
    }
    this.#record(line, length);
  }

  #record(line: number, length: number): void {
    if (!Number.isNaN(this.#lengths[line]!)) return;
    this.#lengths[line] = length;
    this.#unknown--;
  }

  async #lineLength(line: number): Promise<number> {
    let length = 0;
    for (const piece of this.#pieces(line)) {
      if (typeof piece === 'string') length += Buffer.byteLength(piece);
      else length += 4 * Math.ceil((await this.images.get(piece.request.request!, piece.index)).length / 3);
    }
    return length;
  }

  #pieces(line: number): Piece[] {
    const index = this.#order[line]!;
    const request = this.batch.requests[index]!;
    const head = `{"id":${JSON.stringify(`batch_req_${request.requestId}`)},"custom_id":${JSON.stringify(request.customId)},`;
    const end = endOf(this.batch);
    if (!ran(request, end)) {
      const code = end.status === 'cancelled' ? 'batch_cancelled' : 'batch_expired';
      const message =
        code === 'batch_cancelled'
          ? 'The batch was cancelled before this request executed.'
          : 'This request could not be executed before the completion window expired.';
      return [`${head}"response":null,"error":${JSON.stringify({ code, message })}}\n`];
    }
    if (!request.ok) {
      const response = {
        status_code: request.error!.status,
        request_id: request.requestId,
        body: { error: request.error!.body },
      };
      return [`${head}"response":${JSON.stringify(response)},"error":null}\n`];
    }
    const image = request.request!;
    // A damaged line (batches.damaged_line_words): cut off inside its first image, the custom_id
    // still readable; or whole, its image's base64 decoding to bytes that are no image.
    if (request.damage === 'malformed')
      return [
        `${head}"response":{"status_code":200,"request_id":"${request.requestId}","body":{"data":[{"b64_json":"iVBORw0KGgoAAAANSUhEUgAA\n`,
      ];
    const pieces: Piece[] = [
      `${head}"response":{"status_code":200,"request_id":"${request.requestId}","body":{"created":${Math.floor(request.finishAt / 1000)},"background":"${image.background}","data":[`,
    ];
    for (let i = 0; i < image.n; i++) {
      pieces.push(i === 0 ? '{"b64_json":"' : '"},{"b64_json":"');
      pieces.push(request.damage === 'undecodable' ? NOT_AN_IMAGE : { request, index: i });
    }
    pieces.push(
      `"}],"output_format":"${image.format}","quality":"${image.quality}","size":"${image.size}","usage":${JSON.stringify(usageOf(image))}}},"error":null}\n`,
    );
    return pieces;
  }
}

/** The base64 of the parts' concatenation, in slices, without concatenating them. */
export function* base64Slices(parts: readonly Buffer[]): Generator<string> {
  let carry = Buffer.alloc(0);
  for (const part of parts) {
    let at = 0;
    if (carry.length > 0) {
      const need = 3 - carry.length;
      if (part.length < need) {
        carry = Buffer.concat([carry, part]);
        continue;
      }
      yield Buffer.concat([carry, part.subarray(0, need)]).toString('base64');
      at = need;
      carry = Buffer.alloc(0);
    }
    const whole = at + Math.floor((part.length - at) / 3) * 3;
    for (let p = at; p < whole; p += SLICE_BYTES)
      yield part.subarray(p, Math.min(p + SLICE_BYTES, whole)).toString('base64');
    carry = Buffer.from(part.subarray(whole));
  }
  if (carry.length > 0) yield carry.toString('base64');
}
