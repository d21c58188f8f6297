// Generates types/*.d.ts from the committed JSON Schemas (schemas/json, exported from the
// pydantic models by `python -m turngraph.schemas.export`) with json-schema-to-typescript.
//   node scripts/generate-types.mjs          # rewrite types/
//   node scripts/generate-types.mjs --check  # exit 1 if a committed file is out of date
import { readdirSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compile } from "json-schema-to-typescript";

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMA_DIR = join(here, "..", "..", "..", "schemas", "json");
export const TYPES_DIR = join(here, "..", "types");
const BANNER =
  "/* Generated from schemas/json by producers/typescript/scripts/generate-types.mjs: do not edit. */";

export async function renderAll() {
  const files = new Map();
  const exports = [];
  for (const name of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith(".schema.json")).sort()) {
    const stem = name.replace(/\.schema\.json$/, "");
    const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, name), "utf8"));
    const text = await compile(schema, schema.title, {
      bannerComment: BANNER,
      additionalProperties: false,
      cwd: SCHEMA_DIR,
      format: true,
      maxItems: -1,
    });
    files.set(`${stem}.d.ts`, text);
    exports.push(`export type { ${schema.title} } from "./${stem}";`);
  }
  files.set("index.d.ts", `${BANNER}\n${exports.join("\n")}\n`);
  return files;
}

async function main() {
  const check = process.argv.includes("--check");
  const files = await renderAll();
  let stale = 0;
  for (const [name, text] of files) {
    const path = join(TYPES_DIR, name);
    if (check) {
      if (!existsSync(path) || readFileSync(path, "utf8") !== text) {
        console.log(`out of date: ${path} (run: npm run types --prefix producers/typescript)`);
        stale += 1;
      }
    } else {
      writeFileSync(path, text);
      console.log(`wrote ${path}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  await main();
}
