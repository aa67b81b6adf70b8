#!/usr/bin/env python3
"""The JSON schemas themselves: strict and documented.

Usage: check_json_schemas.py DOCS_DIR

Every docs/json/*.schema.json parses; every schema of an object lists its
members (additionalProperties false) and which are required, each member
has a description; docs/json.md links every schema file and links none that
does not exist. Exit 0, or 1 after listing every problem.
"""
import json
import os
import re
import sys


def walk(schema, path, problems):
    if isinstance(schema, dict):
        t = schema.get("type")
        types = t if isinstance(t, list) else [t]
        if "object" in types and "properties" in schema:
            if schema.get("additionalProperties") is not False:
                problems.append(f"{path}: an object without additionalProperties: false")
            if "required" not in schema:
                problems.append(f"{path}: an object without a required list")
            for key in schema.get("required", []):
                if key not in schema["properties"]:
                    problems.append(f"{path}: required '{key}' is not a property")
            for key, sub in schema["properties"].items():
                if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub:
                    problems.append(f"{path}.{key}: no description")
        for key, sub in schema.items():
            if key in ("properties", "$defs"):
                for name, s in sub.items():
                    walk(s, f"{path}.{name}", problems)
            elif isinstance(sub, (dict, list)):
                walk(sub, f"{path}/{key}", problems)
    elif isinstance(schema, list):
        for i, s in enumerate(schema):
            walk(s, f"{path}[{i}]", problems)


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    docs = argv[0]
    problems = []
    files = sorted(f for f in os.listdir(os.path.join(docs, "json")) if f.endswith(".schema.json"))
    for f in files:
        try:
            schema = json.load(open(os.path.join(docs, "json", f)))
        except ValueError as e:
            problems.append(f"{f}: not JSON: {e}")
            continue
        walk(schema, f, problems)
    linked = set(re.findall(r"\(json/([a-z0-9-]+\.schema\.json)\)", open(os.path.join(docs, "json.md")).read()))
    for f in files:
        if f not in linked:
            problems.append(f"json.md does not link {f}")
    for f in sorted(linked - set(files)):
        problems.append(f"json.md links {f}, which does not exist")
    for p in problems:
        print(p)
    print(f"check_json_schemas: {len(files)} schemas, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
