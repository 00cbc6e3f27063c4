// What every provider client only passes on to the connection it is built over (api/http-client.ts's
// ApiHttp, or for the first API its typed wire client): result downloads, the calls counted by
// endpoint, and closing the pool. A client extends this and adds its own calls over `http`.
import type { DownloadedResult } from '../api/download.js';
import type { CallOptions, EndpointStats } from './types.js';

/** The calls a client hands on unchanged. */
export interface ClientConnection {
  download(url: string, options?: CallOptions): Promise<DownloadedResult>;
  stats(): Record<string, EndpointStats>;
  close(): Promise<void>;
}

export abstract class HttpBackedClient<C extends ClientConnection> {
  // Private fields are invisible to util.inspect, JSON.stringify and object spreading.
  readonly #http: C;

  protected constructor(http: C) {
    this.#http = http;
  }

  /** The connection this client makes its calls over. */
  protected get http(): C {
    return this.#http;
  }

  /** Streams a result image. No credentials are sent: the result host may be another origin. */
  download(url: string, options: CallOptions = {}): Promise<DownloadedResult> {
    return this.#http.download(url, options);
  }

  /**
   * Calls made so far, by endpoint template; a failed call counts in both fields. A download
   * whose stream fails later (truncation) counts as a successful call here.
   */
  stats(): Record<string, EndpointStats> {
    return this.#http.stats();
  }

  /** Closes the connection pool if the client created it. */
  close(): Promise<void> {
    return this.#http.close();
  }
}
