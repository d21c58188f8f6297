#!/usr/bin/env node
// Lints Cypher with Neo4j's own parser and semantic analysis
// (@neo4j-cypher/language-support, `lintCypherQuery`), offline.
//
// Input, on stdin, one JSON object:
//   {"schema": {"labels": [...], "relationshipTypes": [...], "propertyKeys": [...]},
//    "statements": [{"name": "...", "text": "...", "parameters": {...},
//                    "consoleCommands": false}]}
// Output, on stdout, one JSON array: [{"name", "diagnostics": [{"severity", "message",
//   "line", "character"}]}], severity "error" | "warning" | "information" | "hint".
// Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 unusable input.
//
// CommonJS on purpose: the package's ESM build has extension-less imports Node rejects.
'use strict';

const { lintCypherQuery } = require('@neo4j-cypher/language-support');

const SEVERITY = { 1: 'error', 2: 'warning', 3: 'information', 4: 'hint' };

function readStdin() {
  return require('node:fs').readFileSync(0, 'utf8');
}

function lintOne(statement, schema) {
  const dbSchema = { ...schema, parameters: statement.parameters || {} };
  const diagnostics = lintCypherQuery(
    statement.text,
    dbSchema,
    Boolean(statement.consoleCommands),
  );
  return {
    name: statement.name,
    diagnostics: diagnostics.map((d) => ({
      severity: SEVERITY[d.severity] || 'error',
      message: d.message,
      line: d.range.start.line + 1,
      character: d.range.start.character + 1,
    })),
  };
}

function main() {
  let request;
  try {
    request = JSON.parse(readStdin());
  } catch (error) {
    process.stderr.write(`cypher-lint: input is not JSON: ${error.message}\n`);
    return 2;
  }
  if (!request || !Array.isArray(request.statements)) {
    process.stderr.write('cypher-lint: input needs a "statements" array\n');
    return 2;
  }
  const schema = request.schema || {};
  const results = request.statements.map((s) => lintOne(s, schema));
  process.stdout.write(JSON.stringify(results));
  const failed = results.some((r) => r.diagnostics.some((d) => d.severity === 'error'));
  return failed ? 1 : 0;
}

process.exitCode = main();
