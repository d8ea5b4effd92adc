/**
 * The sizes of the code's units: files over a line budget and the longest
 * functions (declarations, methods, arrow functions and function
 * expressions, measured in source lines). For keeping modules small.
 *
 * Run: `deno run --allow-read tools/unit_sizes.ts [dir=src] [--top 10] [--max-lines 400]`
 *
 * @module
 */

import ts from "typescript";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";

interface Unit {
  file: string;
  name: string;
  line: number;
  lines: number;
}

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* sources(path);
    else if (e.isFile && e.name.endsWith(".ts")) yield path;
  }
}

function unitName(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as { name?: ts.Node };
  if (named.name) return named.name.getText(sf);
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent)) return parent.name.getText(sf);
  if (parent && ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  return "(anonymous)";
}

function unitsOf(file: string, text: string): Unit[] {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const units: Unit[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      units.push({ file, name: unitName(node, sf), line: start + 1, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return units;
}

if (import.meta.main) {
  const args = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      top: { type: "string", default: "10" },
      "max-lines": { type: "string", default: "400" },
    },
  });
  const dir = args.positionals[0] ?? "src";
  const maxLines = Number(args.values["max-lines"]);
  const long: [string, number][] = [];
  const units: Unit[] = [];
  for await (const path of sources(dir)) {
    const text = await Deno.readTextFile(path);
    const file = relative(Deno.cwd(), path);
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines > maxLines) long.push([file, lines]);
    units.push(...unitsOf(file, text));
  }
  long.sort((a, b) => b[1] - a[1]);
  console.log(`files over ${maxLines} lines: ${long.length}`);
  for (const [file, lines] of long) console.log(`  ${lines}  ${file}`);
  units.sort((a, b) => b.lines - a.lines);
  console.log(`longest functions:`);
  for (const u of units.slice(0, Number(args.values.top))) {
    console.log(`  ${u.lines}  ${u.file}:${u.line} ${u.name}`);
  }
}
