// Sums up V8 CPU profiles (node --cpu-prof, as the capacity phase's --cpu-prof writes them): the
// self time of every sample, by where its code lives (a package, node's internals, a folder of
// pixelmill, or V8's own work such as the garbage collector), and the functions that took most.
// A flame graph's main consumers, as text for BENCHMARKS.md.
//
//   node dist/bench/cpu-profile.js DIR [--top 15]
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: the package, node's internals, pixelmill's folder, or V8's work. */
function placeOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node internals';
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules) return modules[1]!;
  const own = /\/dist\/([^/]+)\//.exec(url);
  return own ? `pixelmill ${own[1]}/` : url;
}

function selfTimes(profile: Profile): Map<ProfileNode, number> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const times = new Map<ProfileNode, number>();
  profile.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    times.set(node, (times.get(node) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return times;
}

function add(into: Map<string, number>, key: string, us: number): void {
  into.set(key, (into.get(key) ?? 0) + us);
}

function table(title: string, totals: Map<string, number>, busyUs: number, top: number): string {
  const rows = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  const lines = rows.map(
    ([key, us]) =>
      `${(us / 1000).toFixed(0).padStart(8)} ms ${((100 * us) / busyUs).toFixed(1).padStart(5)}%  ${key}`,
  );
  return [title, ...lines].join('\n');
}

function main(): void {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { top: { type: 'string', default: '15' } },
  });
  const dir = positionals[0];
  if (!dir) throw new Error('usage: cpu-profile.js DIR [--top N]');
  const top = Number(values.top);
  const places = new Map<string, number>();
  const functions = new Map<string, number>();
  let busyUs = 0;
  const files = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'));
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    for (const [node, us] of selfTimes(profile)) {
      const { functionName, url, lineNumber } = node.callFrame;
      if (functionName === '(idle)') continue;
      busyUs += us;
      const place = placeOf(url, functionName);
      add(places, place, us);
      add(
        functions,
        `${functionName || '(anonymous)'} ${place}${url ? ` ${basename(url)}:${lineNumber + 1}` : ''}`,
        us,
      );
    }
  }
  process.stdout.write(
    `${files.length} profiles, ${(busyUs / 1e6).toFixed(1)} s busy (idle left out)\n\n` +
      `${table('by where the code lives', places, busyUs, top)}\n\n` +
      `${table('by function', functions, busyUs, top)}\n`,
  );
}

try {
  main();
} catch (error) {
  process.stderr.write(`cpu-profile: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
