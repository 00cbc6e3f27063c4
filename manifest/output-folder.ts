// Where a run may write on this machine. A manifest naming `/`, `/etc` or the home folder itself
// is refused when it is validated; a folder that holds someone else's files, or one that cannot be
// written, is refused by `run` before anything is submitted (client/output-check.ts).

/** Folders of the operating system: never a run's output, nor anything inside them. */
const SYSTEM_TREES = [
  '/proc',
  '/sys',
  '/dev',
  '/etc',
  '/boot',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/usr',
  '/run',
];
/** Folders that are fine to write inside of, but never to fill as an output themselves. */
const SYSTEM_ROOTS = ['/', '/home', '/root', '/var', '/tmp', '/opt', '/srv', '/mnt', '/media'];

/** Why `dir` (absolute) must not be an output folder, or undefined. */
export function systemFolder(dir: string, home: string | undefined): string | undefined {
  const clean = dir.length > 1 ? dir.replace(/\/+$/, '') : dir;
  const tree = SYSTEM_TREES.find((root) => clean === root || clean.startsWith(`${root}/`));
  if (tree !== undefined)
    return `${clean} is inside ${tree}, a folder of the operating system: choose a folder of your own`;
  if (SYSTEM_ROOTS.includes(clean) || clean === home?.replace(/\/+$/, '')) {
    return `${clean} is a system or home folder: name a folder of its own for the run, e.g. ${clean === '/' ? '' : clean}/out/catalog`;
  }
  return undefined;
}
