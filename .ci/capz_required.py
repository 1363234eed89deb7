#!/usr/bin/env python3
"""Lists the fields CAPZ's v1beta1 CRDs require, one `Kind path` line each (`[]` for a list's
items, `{}` for a map's values), from a directory of CAPZ's CRD files. Needs PyYAML.

Usage: capz_required.py CRD_DIR > shared/api/tests/fixtures/capz/required.txt
"""
import sys
from pathlib import Path

import yaml


def load(path):
    return yaml.safe_load(path.read_text())


def walk(schema, path, out):
    for name in schema.get("required", []) or []:
        out.add(f"{path}.{name}")
    for name, prop in (schema.get("properties") or {}).items():
        walk(prop, f"{path}.{name}", out)
    if isinstance(schema.get("items"), dict):
        walk(schema["items"], f"{path}[]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        walk(schema["additionalProperties"], f"{path}{{}}", out)


def main():
    lines = set()
    for path in sorted(Path(sys.argv[1]).glob("*.yaml")):
        crd = load(path)
        kind = crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if version["name"] != "v1beta1":
                continue
            out = set()
            walk(version["schema"]["openAPIV3Schema"], "", out)
            lines.update(f"{kind} {p.lstrip('.')}" for p in out)
    print("\n".join(sorted(lines)))


main()
