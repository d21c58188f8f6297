// Every committed JSON Schema compiled with ajv (draft 2020-12, strict, formats checked).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { SCHEMA_DIR } from "../scripts/generate-types.mjs";

export function loadValidators() {
  const ajv = new Ajv2020({ strict: true, allErrors: true, discriminator: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: "x-clamped-to", schemaType: "object" });
  const validators = {};
  for (const name of readdirSync(SCHEMA_DIR).filter((f) => f.endsWith(".schema.json"))) {
    const schema = JSON.parse(readFileSync(join(SCHEMA_DIR, name), "utf8"));
    validators[name.replace(/\.schema\.json$/, "")] = ajv.compile(schema);
  }
  return validators;
}

/** Assert-style check: throws with ajv's errors when `value` does not match `stem`. */
export function check(validators, stem, value) {
  const validate = validators[stem];
  if (!validate) throw new Error(`no schema ${stem}`);
  if (!validate(value)) {
    throw new Error(`${stem} rejects ${JSON.stringify(value)}: ${JSON.stringify(validate.errors)}`);
  }
}
