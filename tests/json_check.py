#!/usr/bin/env python3
"""Validate edhoc-cli --json output against its schema (docs/json/*.schema.json).

Usage: json_check.py SCHEMA [FILE]      (FILE defaults to standard input)
       json_check.py --lines SCHEMA [FILE]   one JSON document per line

A small subset of JSON Schema (draft 2020-12 keywords) is enough for our
schemas: type (a name or a list), properties, required,
additionalProperties (false or a schema), items, enum, const, minimum,
maximum, pattern, anyOf, $ref to "#/$defs/NAME". NaN and Infinity are
refused: they are not JSON (RFC 8259 Section 6). Exit 0 when valid, 1 with
the path of the first error otherwise, 2 on a usage or schema error.
"""
import json
import re
import sys

TYPES = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


class Invalid(Exception):
    pass


def resolve(root, schema):
    ref = schema.get("$ref")
    if ref is None:
        return schema
    if not ref.startswith("#/$defs/"):
        raise SystemExit(f"json_check: unsupported $ref {ref}")
    return resolve(root, root["$defs"][ref[len("#/$defs/"):]])


def check(root, schema, value, path):
    schema = resolve(root, schema)
    t = schema.get("type")
    if t is not None:
        names = t if isinstance(t, list) else [t]
        if not any(TYPES[n](value) for n in names):
            raise Invalid(f"{path}: expected {'/'.join(names)}, got {json.dumps(value)[:80]}")
    if "const" in schema and value != schema["const"]:
        raise Invalid(f"{path}: expected {json.dumps(schema['const'])}, got {json.dumps(value)[:80]}")
    if "enum" in schema and value not in schema["enum"]:
        raise Invalid(f"{path}: {json.dumps(value)[:80]} is not one of {schema['enum']}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise Invalid(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise Invalid(f"{path}: {value} > maximum {schema['maximum']}")
    if isinstance(value, str) and "pattern" in schema and not re.search(schema["pattern"], value):
        raise Invalid(f"{path}: {json.dumps(value)[:80]} does not match {schema['pattern']}")
    if "anyOf" in schema:
        errors = []
        for alt in schema["anyOf"]:
            try:
                check(root, alt, value, path)
                break
            except Invalid as e:
                errors.append(str(e))
        else:
            raise Invalid(f"{path}: matches no alternative ({'; '.join(errors)})")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                raise Invalid(f"{path}: missing required member '{key}'")
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                check(root, props[key], v, f"{path}.{key}")
            elif extra is False:
                raise Invalid(f"{path}: member '{key}' is not in the schema")
            elif isinstance(extra, dict):
                check(root, extra, v, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            check(root, schema["items"], v, f"{path}[{i}]")


def refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def main(argv):
    lines = False
    if argv and argv[0] == "--lines":
        lines = True
        argv = argv[1:]
    if not 1 <= len(argv) <= 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        schema = json.load(f)
    text = open(argv[1]).read() if len(argv) == 2 and argv[1] != "-" else sys.stdin.read()
    docs = [l for l in text.splitlines() if l.strip()] if lines else [text]
    if not docs:
        print("json_check: no JSON at all", file=sys.stderr)
        return 1
    for n, doc in enumerate(docs, 1):
        where = f"line {n}: " if lines else ""
        try:
            value = json.loads(doc, parse_constant=refuse_constant)
        except ValueError as e:
            print(f"json_check: {where}not JSON: {e}", file=sys.stderr)
            return 1
        try:
            check(schema, schema, value, "$")
        except Invalid as e:
            print(f"json_check: {where}{e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
