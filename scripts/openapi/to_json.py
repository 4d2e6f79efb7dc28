#!/usr/bin/env python3
#
# scripts/openapi/to_json.py
#
# docs/openapi.yaml is the one home of the API contract; docs/openapi.json is what the build
# embeds into timewheeld (GET /v1/openapi.json) and what the contract test reads, generated
# from it here and committed, so that a build needs no YAML parser. `--check` (the ctest
# openapi_json_current) fails when the committed JSON is not what the YAML gives: an edit of
# one without the other cannot pass CI.
#
# Usage: scripts/openapi/to_json.py [--check] [REPO]   (Debian's python3-yaml)

import json
import os
import sys

import yaml


def generated(repo):
    with open(os.path.join(repo, 'docs', 'openapi.yaml'), encoding='utf-8') as f:
        # safe_load would read an unquoted time as a datetime: json.dumps then refuses it,
        # so that nothing but JSON's own types reaches the document.
        document = yaml.safe_load(f)
    # ASCII only (anything else as \u escapes): the build cuts it into C++ literals at any
    # byte (server/api/embed_openapi.cmake), which must never split a UTF-8 sequence.
    return json.dumps(document, indent=2, ensure_ascii=True) + '\n'


def main():
    args = [a for a in sys.argv[1:] if a != '--check']
    repo = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
    text = generated(repo)
    target = os.path.join(repo, 'docs', 'openapi.json')
    if '--check' in sys.argv:
        with open(target, encoding='utf-8') as f:
            if f.read() != text:
                print('docs/openapi.json is not what docs/openapi.yaml gives: '
                      'run scripts/openapi/to_json.py and commit both', file=sys.stderr)
                return 1
        return 0
    with open(target, 'w', encoding='utf-8') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
