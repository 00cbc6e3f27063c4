// The OpenAI emulator's output and error files: lines in no order but every custom_id once, real
// images that decode (PNG, JPEG, WebP, padded or not, n of them), the same bytes on every read,
// `Range: bytes=N-` resuming to the same bytes as a whole download, the cut-download fault once per
// file and on every response, a 2,000-line input, and a ~300 MB padded file streamed without the
// emulator holding it.
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import {
  DEMO_OPENAI_KEY,
  download,
  downloadResuming,
  fixed,
  getBatch,
  jsonl,
  line,
  linesOf,
  ManualClock,
  startBatch,
  startTestOpenAI,
} from './emulator-openai-harness.js';
import type { OpenAIConfigOverrides } from '../emulator/openai/index.js';

async function completedBatch(content: string, config: OpenAIConfigOverrides = {}) {
  const clock = new ManualClock();
  const emulator = await startTestOpenAI(fixed(config), { clock });
  const created = await startBatch(emulator, content);
  clock.advance(200_000);
  const batch = await getBatch(emulator, created.id);
  expect(batch.status).toBe('completed');
  return { clock, emulator, batch };
}

describe('the output file', () => {
  it('has every custom_id once, in no particular order, each line an images answer that decodes', async () => {
    const { emulator, batch } = await completedBatch(jsonl(12));
    const got = await download(emulator, batch.output_file_id);
    expect(got.status).toBe(200);
    // The first read is sent chunked (it starts before the file's size is known); later ones have it.
    expect(got.headers['content-length']).toBeUndefined();
    const again = await download(emulator, batch.output_file_id);
    expect(Number(again.headers['content-length'])).toBe(got.body.length);
    expect(again.body.equals(got.body)).toBe(true);
    const lines = linesOf(got.body);
    const ids = lines.map((l) => l.custom_id as string);
    expect([...ids].sort()).toEqual(Array.from({ length: 12 }, (_, i) => `item-${i}`).sort());
    expect(ids).not.toEqual(Array.from({ length: 12 }, (_, i) => `item-${i}`));
    for (const l of lines) {
      expect(l).toMatchObject({
        error: null,
        response: {
          status_code: 200,
          body: { background: 'opaque', output_format: 'png', quality: 'low', size: '1024x1024' },
        },
      });
      expect(l.response.body.usage).toMatchObject({ output_tokens: 272 });
      const image = await sharp(Buffer.from(l.response.body.data[0].b64_json, 'base64')).metadata();
      expect(image).toMatchObject({ format: 'png', width: 1024, height: 1024 });
    }
    const file = await (
      await request(`${emulator.url}/v1/files/${batch.output_file_id}`, {
        headers: { authorization: `Bearer ${DEMO_OPENAI_KEY}` },
      })
    ).body.json();
    expect(file).toMatchObject({ object: 'file', purpose: 'batch_output', bytes: got.body.length });
  });

  it('carries n images per line, in the size and format asked', async () => {
    const content = [
      line('wide', { n: 3, size: '1536x1024', output_format: 'jpeg' }),
      line('tall', { n: 2, size: '1024x1536', output_format: 'webp', background: 'transparent' }),
    ].join('\n');
    const { emulator, batch } = await completedBatch(content);
    const lines = Object.fromEntries(
      linesOf((await download(emulator, batch.output_file_id)).body).map((l) => [
        l.custom_id,
        l.response.body,
      ]),
    );
    expect(lines.wide.data).toHaveLength(3);
    expect(lines.tall.data).toHaveLength(2);
    expect(lines.tall.background).toBe('transparent');
    for (const { b64_json } of lines.wide.data)
      expect(await sharp(Buffer.from(b64_json, 'base64')).metadata()).toMatchObject({
        format: 'jpeg',
        width: 1536,
        height: 1024,
      });
    for (const { b64_json } of lines.tall.data)
      expect(await sharp(Buffer.from(b64_json, 'base64')).metadata()).toMatchObject({
        format: 'webp',
        width: 1024,
        height: 1536,
      });
  });

  it('is padded by image_padding_bytes and still decodes, in every format', async () => {
    const padding = 300_000;
    const content = ['png', 'jpeg', 'webp'].map((f) => line(f, { output_format: f })).join('\n');
    const plain = await completedBatch(content);
    const padded = await completedBatch(content, { images: { image_padding_bytes: padding } });
    const images = async (run: typeof plain) =>
      Object.fromEntries(
        linesOf((await download(run.emulator, run.batch.output_file_id)).body).map((l) => [
          l.custom_id,
          Buffer.from(l.response.body.data[0].b64_json, 'base64'),
        ]),
      );
    const [small, big] = [await images(plain), await images(padded)];
    for (const format of ['png', 'jpeg', 'webp']) {
      expect(big[format]!.length - small[format]!.length).toBeGreaterThanOrEqual(padding);
      const decoded = await sharp(big[format]!).raw().toBuffer({ resolveWithObject: true });
      expect(decoded.info).toMatchObject({ width: 1024, height: 1024 });
      // Buffer.equals: toEqual would compare 3 million elements one by one.
      expect(decoded.data.equals(await sharp(small[format]!).raw().toBuffer())).toBe(true);
    }
  });

  it('is the same bytes on every read, and a Range resume gives the same bytes as a whole download', async () => {
    const { emulator, batch } = await completedBatch(jsonl(8), { images: { image_padding_bytes: 50_000 } });
    const whole = await download(emulator, batch.output_file_id);
    expect((await download(emulator, batch.output_file_id)).body.equals(whole.body)).toBe(true);
    for (const from of [1, 777, 70_001, whole.body.length - 1]) {
      const part = await download(emulator, batch.output_file_id, `bytes=${from}-`);
      expect(part.status).toBe(206);
      expect(part.headers['content-range']).toBe(
        `bytes ${from}-${whole.body.length - 1}/${whole.body.length}`,
      );
      expect(part.body.equals(whole.body.subarray(from))).toBe(true);
    }
    const bounded = await download(emulator, batch.output_file_id, 'bytes=10-19');
    expect(bounded.body.equals(whole.body.subarray(10, 20))).toBe(true);
    const beyond = await download(emulator, batch.output_file_id, `bytes=${whole.body.length}-`);
    expect(beyond.status).toBe(416);
    expect(emulator.stats().files.ranges_served).toBe(5);
  });

  it('counts bytes, not characters: custom_ids with quotes and non-ASCII resume with Range exactly', async () => {
    const ids = ['ü-"quoted"', '🙂 smile', 'tab\there', 'plain'];
    const { emulator, batch } = await completedBatch(ids.map((id) => line(id)).join('\n'));
    const whole = await download(emulator, batch.output_file_id);
    expect(
      linesOf(whole.body)
        .map((l) => l.custom_id)
        .sort(),
    ).toEqual([...ids].sort());
    const cut = whole.body.indexOf('🙂') + 2;
    const rest = await download(emulator, batch.output_file_id, `bytes=${cut}-`);
    expect(Buffer.concat([whole.body.subarray(0, cut), rest.body]).equals(whole.body)).toBe(true);
  });

  it('is cut after cut_output_after_bytes once per file; the client resumes with Range to the same bytes', async () => {
    const { emulator, batch } = await completedBatch(jsonl(6), {
      faults: { cut_output_after_bytes: 100_000 },
      images: { image_padding_bytes: 40_000 },
    });
    const first = await download(emulator, batch.output_file_id);
    expect(first.cut).toBe(true);
    expect(first.body.length).toBeLessThanOrEqual(100_000);
    const rest = await download(emulator, batch.output_file_id, `bytes=${first.body.length}-`);
    expect(rest.cut).toBe(false);
    const whole = await download(emulator, batch.output_file_id);
    expect(whole.cut).toBe(false);
    expect(Buffer.concat([first.body, rest.body]).equals(whole.body)).toBe(true);
    expect(emulator.stats().faults.output_download_cut).toBe(1);
  });

  it('is cut on every response with cut_output_mode every_response: each resume moves on by the cut size', async () => {
    const { emulator, batch } = await completedBatch(jsonl(4), {
      faults: { cut_output_after_bytes: 20_000, cut_output_mode: 'every_response' },
    });
    const { body, cuts } = await downloadResuming(emulator, batch.output_file_id);
    expect(cuts).toBe(Math.ceil(body.length / 20_000) - 1);
    expect(
      linesOf(body)
        .map((l) => l.custom_id)
        .sort(),
    ).toEqual(['item-0', 'item-1', 'item-2', 'item-3']);
  });
});

describe('inputs and outputs at size', () => {
  it('accepts a 2,000-line input and answers every line', async () => {
    const { emulator, batch } = await completedBatch(jsonl(2000), { images: { content: 'one_per_size' } });
    expect(batch.request_counts).toEqual({ total: 2000, completed: 2000, failed: 0 });
    const lines = linesOf((await download(emulator, batch.output_file_id)).body);
    expect(new Set(lines.map((l) => l.custom_id)).size).toBe(2000);
  });

  it('streams a ~300 MB output file without holding it (RSS growth measured)', async () => {
    const { emulator, batch } = await completedBatch(jsonl(23), {
      images: { image_padding_bytes: 10_000_000, content: 'one_per_size' },
    });
    const before = process.memoryUsage.rss();
    let peak = before;
    const response = await request(`${emulator.url}/v1/files/${batch.output_file_id}/content`, {
      headers: { authorization: `Bearer ${DEMO_OPENAI_KEY}` },
    });
    let bytes = 0;
    let newlines = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      bytes += chunk.length;
      // indexOf, not a loop over 300 million bytes in JavaScript: the time is the stream's.
      for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, at + 1)) newlines++;
      peak = Math.max(peak, process.memoryUsage.rss());
    }
    expect(bytes).toBeGreaterThan(300_000_000);
    const file = await (
      await request(`${emulator.url}/v1/files/${batch.output_file_id}`, {
        headers: { authorization: `Bearer ${DEMO_OPENAI_KEY}` },
      })
    ).body.json();
    expect(file).toMatchObject({ bytes });
    expect(newlines).toBe(23);
    const growthMb = (peak - before) / 1e6;
    console.log(
      `openai emulator: streamed ${(bytes / 1e6).toFixed(0)} MB, RSS growth ${growthMb.toFixed(0)} MB`,
    );
    // Generous: the emulator and this reader share the process; holding the file would add 300 MB.
    expect(growthMb).toBeLessThan(200);
    expect(emulator.stats().files.lines_served).toBe(23);
  });
});
