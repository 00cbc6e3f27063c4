// The polling run of the `pixelmill` phase again, with an `s3://` output on a real S3-compatible
// server (rclone serve s3): plan, outcomes, submit journal, images and report all in the bucket.
// A counting proxy in front of the server gives the object-store requests per image.
import { round } from './figures.js';
import { comparePixelmill, type CompareSpec, type SideResult } from './compare.js';
import { startS3RequestCounter, type S3RequestKind } from './s3-request-counter.js';
import { startS3Server } from './s3-server.js';

const BUCKET = 'bench';

export interface S3OutputResult {
  side: SideResult;
  /** Requests the run made to the store, by kind (the benchmark's own reads not counted). */
  requests: Record<S3RequestKind, number>;
  requests_per_image: number;
}

export async function s3OutputBenchmark(
  spec: CompareSpec & { maxInFlight: number },
): Promise<S3OutputResult> {
  const server = await startS3Server();
  try {
    await server.createBucket(BUCKET);
    const counter = await startS3RequestCounter(server.endpoint);
    try {
      const side = await comparePixelmill({
        ...spec,
        s3: { endpoint: counter.url, bucket: BUCKET, env: server.env, client: server.client },
      });
      const requests = counter.counts();
      const total = Object.values(requests).reduce((sum, count) => sum + count, 0);
      return { side, requests, requests_per_image: side.images > 0 ? round(total / side.images, 2) : 0 };
    } finally {
      await counter.stop();
    }
  } finally {
    await server.stop();
  }
}
