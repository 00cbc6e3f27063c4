// CPU time of process trees, read from /proc: a process counted with every process below it, as
// PostgreSQL must be, which forks a backend per connection: its CPU is the postmaster's tree, not
// one process (the cluster that bench/capacity-cluster.ts measures).
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's CPU times: USER_HZ, 100 on every Linux ABI node runs on. */
const USER_HZ = 100;

interface ProcStat {
  ppid: number;
  /** utime + stime + cutime + cstime: its own CPU and that of the children it has reaped. */
  ticks: number;
}

function readStat(pid: string): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name, in parentheses, may hold spaces: the fields are counted after its end.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined; // gone since the listing
  }
}

function processIds(): string[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name));
}

/**
 * CPU ticks of each root's tree at this instant. A child that exits is reaped by its parent,
 * whose cutime/cstime then hold its ticks, so a tree's total only grows while backends come and
 * go (one that has exited but is not yet reaped still has its stat).
 */
function treeTicks(roots: readonly number[]): number[] {
  const stats = new Map<number, ProcStat>();
  for (const pid of processIds()) {
    const stat = readStat(pid);
    if (stat) stats.set(Number(pid), stat);
  }
  const children = new Map<number, number[]>();
  for (const [pid, { ppid }] of stats) children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  const total = (pid: number): number =>
    (stats.get(pid)?.ticks ?? 0) + (children.get(pid) ?? []).reduce((sum, child) => sum + total(child), 0);
  return roots.map(total);
}

/**
 * Measures named process trees from now until stop(): the CPU seconds (user and system) each
 * tree used in between. Two readings suffice, as tree totals never lose a reaped child's time.
 */
export class TreeCpuMeter<Name extends string> {
  private readonly names: Name[];
  private readonly first: number[];

  constructor(private readonly roots: Record<Name, number>) {
    this.names = Object.keys(roots) as Name[];
    this.first = treeTicks(this.names.map((name) => roots[name]));
  }

  /** CPU seconds per name since construction. */
  stop(): Record<Name, number> {
    const last = treeTicks(this.names.map((name) => this.roots[name]));
    return Object.fromEntries(
      this.names.map((name, i) => [name, (last[i]! - this.first[i]!) / USER_HZ]),
    ) as Record<Name, number>;
  }
}
