// The error vocabulary, checked against the classes themselves: every error
// class in src/ derives from SluiceError and lists the codes it carries;
// each code is snake_case, has one entry (one meaning) in ERROR_CODES, and
// no other spelling of it (kebab-case, run together) appears anywhere.
import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { ClientError, ERROR_CODES, type ErrorCode, SluiceError } from "../../src/errors/mod.ts";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));
const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;

async function* sources(dir: string): AsyncGenerator<string> {
  for await (const e of Deno.readDir(dir)) {
    const path = join(dir, e.name);
    if (e.isDirectory) yield* sources(path);
    else if (e.isFile && e.name.endsWith(".ts")) yield path;
  }
}

interface Found {
  readonly file: string;
  readonly name: string;
  readonly parent: string;
  readonly exported: boolean;
}

/** Every class in src/ that extends something named like an error, read from the text. */
async function errorClasses(): Promise<Found[]> {
  const found: Found[] = [];
  const declaration = /^(export )?class (\w+) extends (\w+)/gm;
  for await (const file of sources(SRC)) {
    const text = await Deno.readTextFile(file);
    for (const m of text.matchAll(declaration)) {
      if (!/(Error|Problem|Refused)$/.test(m[3]!) && !/(Error|Problem|Refused)$/.test(m[2]!)) {
        continue;
      }
      found.push({ file, name: m[2]!, parent: m[3]!, exported: m[1] !== undefined });
    }
  }
  return found;
}

type ErrorClass = (abstract new (...args: never[]) => unknown) & {
  readonly codes?: readonly ErrorCode[];
};

/** The classes themselves, imported from their modules. */
async function loaded(): Promise<Map<string, ErrorClass>> {
  const classes = new Map<string, ErrorClass>();
  const found = await errorClasses();
  for (const f of found) {
    const where = `${relative(SRC, f.file)}: ${f.name}`;
    if (!f.exported) {
      // A module's private refinement of an exported error (caught where it is thrown).
      const parent = found.find((p) => p.name === f.parent && p.exported);
      assert.ok(parent, `${where} is neither exported nor a refinement of an exported error`);
      continue;
    }
    const mod = await import(new URL(`file://${f.file}`).href);
    const cls = mod[f.name] as ErrorClass | undefined;
    assert.ok(cls, `${where} is not found in its module`);
    classes.set(where, cls);
  }
  return classes;
}

Deno.test("no error class in src/ extends Error directly", async () => {
  for await (const file of sources(SRC)) {
    if (file.endsWith("errors/sluice_error.ts")) continue; // the base itself
    const text = await Deno.readTextFile(file);
    assert.doesNotMatch(
      text,
      /class \w+ extends (Error|TypeError|RangeError|SyntaxError)\b/,
      `${relative(SRC, file)} declares an error outside the vocabulary`,
    );
  }
});

Deno.test("every error class derives from SluiceError and lists codes of the vocabulary", async () => {
  const classes = await loaded();
  assert.ok(classes.size >= 30, `found only ${classes.size} error classes`);
  const used = new Set<string>();
  for (const [where, cls] of classes) {
    // The two bases carry whatever code they are given.
    if (cls === SluiceError as unknown || cls === ClientError as unknown) continue;
    assert.ok(cls.prototype instanceof SluiceError, `${where} does not derive from SluiceError`);
    const codes = cls.codes;
    assert.ok(codes && codes.length > 0, `${where} lists no codes`);
    for (const code of codes) {
      assert.match(code, SNAKE, `${where}: code "${code}" is not snake_case`);
      assert.ok(code in ERROR_CODES, `${where}: code "${code}" is not in ERROR_CODES`);
      used.add(code);
    }
  }
  for (const code of Object.keys(ERROR_CODES)) {
    assert.ok(used.has(code), `ERROR_CODES has "${code}", which no class carries`);
  }
});

Deno.test("each condition has one code: snake_case, one meaning, no second spelling", async () => {
  const codes = Object.keys(ERROR_CODES);
  const meanings = new Map<string, string>();
  const folded = new Map<string, string>();
  for (const code of codes) {
    assert.match(code, SNAKE);
    const meaning = (ERROR_CODES as Record<string, { meaning: string }>)[code]!.meaning;
    assert.equal(
      meanings.get(meaning),
      undefined,
      `"${code}" and "${meanings.get(meaning)}" mean the same`,
    );
    meanings.set(meaning, code);
    // "not_found", "notfound" and "not_founds" are one spelling too many.
    const key = code.replaceAll("_", "").replace(/s$/, "");
    assert.equal(folded.get(key), undefined, `"${code}" and "${folded.get(key)}" are one word`);
    folded.set(key, code);
  }
  // The kebab-case or run-together spelling of a code is nowhere in src/ as a string.
  for await (const file of sources(SRC)) {
    const text = await Deno.readTextFile(file);
    for (const code of codes.filter((c) => c.includes("_"))) {
      for (const other of [code.replaceAll("_", "-"), code.replaceAll("_", "")]) {
        assert.ok(
          !text.includes(`"${other}"`),
          `${relative(SRC, file)} spells "${code}" as "${other}"`,
        );
      }
    }
  }
});

Deno.test("an error's code is one its class lists", async () => {
  // Classes whose code follows from their arguments: what they make is in their list.
  const { LedgerError } = await import("../../src/ledger/mod.ts");
  const { MoqError } = await import("../../src/moq/mod.ts");
  const { StreamError } = await import("../../src/transport/mod.ts");
  const { HttpError } = await import("../../src/client/mod.ts");
  const { HttpProblem } = await import("../../src/http/mod.ts");
  const made: [SluiceError, readonly string[]][] = [
    [new LedgerError("unavailable", "x"), LedgerError.codes],
    [new MoqError("not_found", "x"), MoqError.codes],
    [new StreamError("reset", 3, "x"), StreamError.codes],
    [new StreamError("stopped", 0, "x"), StreamError.codes],
    ...[400, 401, 403, 404, 405, 408, 409, 410, 413, 415, 429, 431, 500, 501, 503].flatMap((s) => [
      [new HttpProblem(s, "x"), HttpProblem.codes] as [SluiceError, readonly string[]],
      [new HttpError(s, "x"), HttpError.codes] as [SluiceError, readonly string[]],
    ]),
  ];
  for (const [error, codes] of made) {
    assert.ok(codes.includes(error.code), `${error.name} made "${error.code}", not in its list`);
  }
});
