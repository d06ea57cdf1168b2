/**
 * Fails when `src/` imports in a cycle: between two files (type-only
 * imports included) or between two top-level folders, whose one-way order
 * docs/design.md states. Run by `npm test`; `--graph` prints the folder
 * dependencies instead.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const SRC = join(ROOT, 'src');

export type Graph = ReadonlyMap<string, readonly string[]>;

/** Relative imports of every `.ts` file under `dir`, as paths relative to `dir`. */
export function importGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of tsFiles(dir)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((i) => i.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => relative(dir, resolve(dirname(file), name.replace(/\.js$/, '.ts'))));
    graph.set(relative(dir, file), [...new Set(targets)]);
  }
  return graph;
}

/** The graph's strongly connected components of more than one node (Tarjan), each sorted. */
export function cycles(graph: Graph): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, counter);
    low.set(node, counter++);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return found;
}

/** The same graph between top-level folders (a file at the top level is its own node). */
export function folderGraph(graph: Graph): Map<string, string[]> {
  const top = (path: string) => path.split('/')[0]!;
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of graph) {
    const from = top(file);
    const set = folders.get(from) ?? new Set<string>();
    for (const target of targets) if (top(target) !== from) set.add(top(target));
    folders.set(from, set);
  }
  return new Map([...folders].map(([folder, set]) => [folder, [...set].sort()]));
}

function tsFiles(dir: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files.push(...tsFiles(path));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const graph = importGraph(SRC);
  const folders = folderGraph(graph);
  if (process.argv.includes('--graph')) {
    for (const [folder, targets] of folders) process.stdout.write(`${folder} -> ${targets.join(', ') || '(nothing)'}\n`);
  } else {
    const problems = [
      ...cycles(graph).map((c) => `files import each other in a cycle: ${c.join(', ')}`),
      ...cycles(folders).map((c) => `top-level folders of src/ import each other in a cycle: ${c.join(', ')}`),
    ];
    for (const problem of problems) process.stderr.write(`check-imports: ${problem}\n`);
    if (problems.length > 0) process.exitCode = 1;
    else process.stdout.write(`check-imports: ${graph.size} files, ${folders.size} folders, no cycles\n`);
  }
}
