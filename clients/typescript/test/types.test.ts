// The types of src/types.ts against docs/openapi.json, the contract: every property of each
// schema exists in its type and the other way round, and so for the lists' query parameters.
// The compiler has already tied each `schemaKeys` record to its interface; this closes the
// loop to the document, so that a field added on either side alone fails here.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { parameterKeys, schemaKeys } from '../src/types';

type Schema = { [k: string]: unknown };
const documentPath = process.env.TIMEWHEEL_OPENAPI_JSON ?? resolve(process.cwd(), '../../docs/openapi.json');
const document = JSON.parse(readFileSync(documentPath, 'utf8')) as Schema;

function pointer(ref: string): Schema {
  assert.ok(ref.startsWith('#/'), `an external $ref: ${ref}`);
  return ref.slice(2).split('/').reduce<Schema>((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')] as Schema, document);
}

/** The object schema a schema stands for: through $ref, array items, and the object member
 *  of a oneOf (the other being null). */
function objectOf(schema: Schema): Schema {
  if (typeof schema.$ref === 'string') return objectOf(pointer(schema.$ref));
  if (schema.items) return objectOf(schema.items as Schema);
  if (Array.isArray(schema.oneOf) && !schema.properties) {
    const objects = (schema.oneOf as Schema[]).map((s) => (s.$ref ? pointer(s.$ref as string) : s)).filter((s) => s.type !== 'null');
    assert.equal(objects.length, 1, 'one non-null member of the oneOf');
    return objectOf(objects[0]);
  }
  return schema;
}

/** Every property name a schema allows, its allOf members' included. */
function propertiesOf(schema: Schema): string[] {
  const own = Object.keys((schema.properties as Schema | undefined) ?? {});
  const inherited = ((schema.allOf as Schema[] | undefined) ?? []).flatMap((s) => propertiesOf(objectOf(s)));
  return [...new Set([...own, ...inherited])].sort();
}

/** `Task.log` is the `log` property of the Task schema; `Cancelled` is the answer of a cancel. */
function schemaNamed(name: string): Schema {
  const answers: Record<string, Schema> = {
    Cancelled: pointer('#/paths/~1v1~1tasks~1{id}/delete/responses/200/content/application~1json/schema'),
  };
  const [head, ...path] = name.split('.');
  let schema = answers[head] ?? objectOf(pointer(`#/components/schemas/${head}`));
  for (const key of path) schema = objectOf((schema.properties as Schema)[key] as Schema);
  return schema;
}

describe('the types against docs/openapi.json', () => {
  for (const [name, keys] of Object.entries(schemaKeys)) {
    it(`${name} has exactly the properties of the document's schema`, () => {
      assert.deepEqual(Object.keys(keys).sort(), propertiesOf(schemaNamed(name)));
    });
  }

  for (const [operation, keys] of Object.entries(parameterKeys)) {
    it(`the query of ${operation} has exactly the document's parameters`, () => {
      const [method, path] = operation.split(' ');
      const params = ((document.paths as Schema)[path] as Schema)[method.toLowerCase()] as { parameters: Schema[] };
      const names = params.parameters.map((p) => (p.$ref ? pointer(p.$ref as string) : p))
        .filter((p) => p.in === 'query').map((p) => p.name as string);
      assert.deepEqual(Object.keys(keys).sort(), names.sort());
    });
  }

  it('covers every object schema of the document that the client sends or reads', () => {
    const covered = new Set(Object.keys(schemaKeys).map((k) => k.split('.')[0]));
    // Scalars and wrappers: a type alias or an argument list stands for them.
    const notClient = ['Time', 'NullableText', 'TaskState', 'Headers', 'NextCursor', 'ConflictError', 'Error', 'BatchSubmit', 'QueueName'];
    const missing = Object.keys(document.components ? (document.components as Schema).schemas as Schema : {})
      .filter((name) => !covered.has(name) && !notClient.includes(name));
    assert.deepEqual(missing, [], 'schemas without a type in src/types.ts (or a reason in this list)');
  });
});
