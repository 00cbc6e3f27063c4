// Reads a Prometheus text exposition (what a worker's /metrics answers) into samples, and sums
// them by metric and labels: what the metrics tests compare with a run's report.

export interface Sample {
  /** As exposed: a counter with its `_total`, a histogram's `_bucket`, `_sum` and `_count`. */
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '' || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line.trim());
    if (!match) throw new Error(`not a Prometheus sample: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL))
      labels[key!] = value!.replace(/\\(.)/g, '$1');
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

export class Scrape {
  constructor(readonly samples: readonly Sample[]) {}

  static async of(url: string): Promise<Scrape> {
    const answer = await fetch(url);
    if (!answer.ok) throw new Error(`GET ${url}: ${answer.status}`);
    return new Scrape(parsePrometheusText(await answer.text()));
  }

  /** The metric names exposed, as a query names them. */
  names(): Set<string> {
    return new Set(this.samples.map((sample) => sample.name));
  }

  /** The sum of `name`'s samples whose labels include `labels`. */
  sum(name: string, labels: Record<string, string> = {}): number {
    return this.samples
      .filter((sample) => sample.name === name)
      .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
      .reduce((total, sample) => total + sample.value, 0);
  }

  /** `name`'s samples summed per value of `label`. */
  by(name: string, label: string): Record<string, number> {
    const sums: Record<string, number> = {};
    for (const sample of this.samples.filter((each) => each.name === name)) {
      const key = sample.labels[label] ?? '';
      sums[key] = (sums[key] ?? 0) + sample.value;
    }
    return sums;
  }
}
