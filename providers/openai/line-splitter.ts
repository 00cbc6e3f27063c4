// Lines of a byte stream, each with the byte offset just past it, holding only the line being
// read: a batch's output file (gigabytes of base64 images) is read at the memory of its longest
// line. The offsets are what a resumed download asks for (`Range: bytes=<end>-`).

export interface StreamedLine {
  /** The line without its newline (UTF-8 decoded; a `\r` before the newline is dropped). */
  text: string;
  /** Offset in the whole file of the byte after the line's newline: where the next line starts. */
  end: number;
}

/**
 * The complete lines of `chunks`, the first starting at file offset `start`. What follows the last
 * newline is returned by `rest()` once the stream has ended (a last line without a newline, or a
 * line cut off: the caller knows which from the file's length).
 */
export class LineSplitter {
  #parts: Buffer[] = [];
  #partBytes = 0;
  #offset: number;

  constructor(start: number) {
    this.#offset = start;
  }

  /** The lines a chunk completes. */
  *push(chunk: Uint8Array): Generator<StreamedLine> {
    let buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (let at = buffer.indexOf(0x0a); at >= 0; at = buffer.indexOf(0x0a)) {
      const head = buffer.subarray(0, at);
      const bytes = this.#partBytes + at + 1;
      const whole = this.#parts.length === 0 ? head : Buffer.concat([...this.#parts, head]);
      this.#parts = [];
      this.#partBytes = 0;
      this.#offset += bytes;
      yield { text: decode(whole), end: this.#offset };
      buffer = buffer.subarray(at + 1);
    }
    if (buffer.length > 0) {
      // Copied: the stream may reuse its chunk's memory.
      this.#parts.push(Buffer.from(buffer));
      this.#partBytes += buffer.length;
    }
  }

  /** Bytes after the last newline (none: undefined), with the offset just past them. */
  rest(): StreamedLine | undefined {
    if (this.#partBytes === 0) return undefined;
    const text = decode(Buffer.concat(this.#parts));
    return { text, end: this.#offset + this.#partBytes };
  }

  /** Offset just past the last complete line. */
  get offset(): number {
    return this.#offset;
  }
}

function decode(bytes: Buffer): string {
  const end = bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
  return bytes.toString('utf8', 0, end);
}
