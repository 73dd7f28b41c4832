#!/usr/bin/env python3
"""Every object the kustomizations under deploy/k8s render (the base, with
the Prometheus Operator, with TLS) against the Kubernetes API's schemas (and
the Prometheus Operator's CRDs), without a cluster: the npm packages
kubernetes-models and @kubernetes-models/prometheus-operator (versions pinned
in tests/deploy/k8s-schema/package-lock.json) give

  1. JSON-schema validation of each object (types, formats such as resource
     quantities, enums), run with node;
  2. TypeScript interfaces of each kind: each manifest is type-checked as an
     object literal with tsc, whose excess-property check rejects fields the
     API does not have (a misspelt field that kubectl would only warn about).

Usage: check_k8s_schema.py WORK_DIR   (npm installs into WORK_DIR/node_modules)
"""

import json
import os
import shutil
import subprocess
import sys

import deploylib as d

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = {
    "apps/v1": "kubernetes-models/apps/v1",
    "v1": "kubernetes-models/v1",
    "policy/v1": "kubernetes-models/policy/v1",
    "monitoring.coreos.com/v1": "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1",
}
NETWORK_ERRORS = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ECONNRESET", "network")

VALIDATE_JS = r"""
import { readFileSync } from "node:fs";
const docs = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failed = 0;
for (const { file, module, doc } of docs) {
  try {
    const Cls = (await import(module + "/" + doc.kind))[doc.kind];
    new Cls(doc).validate();
    console.log(`ok   ${file}: ${doc.kind} ${doc.metadata.name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${file}: ${doc.kind} ${doc.metadata?.name}: ${e.message}`);
  }
}
console.log(`schema: ${docs.length - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
"""


def npm_install(work):
    """npm ci into WORK, unless WORK already holds this lockfile's install."""
    lock = open(os.path.join(HERE, "k8s-schema", "package-lock.json")).read()
    stamp = os.path.join(work, "node_modules", ".gphkv-lock")
    if os.path.exists(stamp) and open(stamp).read() == lock:
        return
    os.makedirs(work, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(HERE, "k8s-schema", name), os.path.join(work, name))
    p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=work,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        out = p.stdout + p.stderr
        print(out[-3000:])
        if any(e in out for e in NETWORK_ERRORS):
            d.skip("npm could not reach its registry to install the schema packages")
        raise RuntimeError("npm ci failed")
    with open(stamp, "w") as f:
        f.write(lock)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    work = os.path.abspath(sys.argv[1])
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            d.skip(f"{tool} is not installed (Node.js is on these machines; the schema check needs it)")
    f = d.Failures()
    npm_install(work)

    # What each kustomization renders (a patch alone is no API object), each
    # distinct object once.
    docs, seen = [], set()
    for folder in d.kustomizations():
        for rel, doc in d.render_kustomization(folder):
            key = json.dumps(doc, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            module = MODULES.get(doc.get("apiVersion"))
            if f.check(module is not None, f"{rel}: no schema known for apiVersion {doc.get('apiVersion')}"):
                docs.append({"file": rel, "module": module, "doc": doc})
    f.check(len(docs) >= 7, f"expected at least 7 API objects (the TLS StatefulSet too), found {len(docs)}")

    # 1. JSON schemas, at run time.
    with open(os.path.join(work, "docs.json"), "w") as out:
        json.dump(docs, out)
    with open(os.path.join(work, "validate.mjs"), "w") as out:
        out.write(VALIDATE_JS)
    p = subprocess.run(["node", "validate.mjs", "docs.json"], cwd=work, capture_output=True, text=True, timeout=120)
    print(p.stdout + p.stderr)
    f.check(p.returncode == 0, "every object validates against its API schema")

    # 2. The API's types: unknown fields are errors.
    lines = []
    for i, x in enumerate(docs):
        kind = x["doc"]["kind"]
        lines.append(f'import type {{ I{kind} as T{i} }} from "{x["module"]}/{kind}";')
    for i, x in enumerate(docs):
        lines.append(f"// {x['file']}")
        lines.append(f"export const doc{i}: T{i} = {json.dumps(x['doc'], indent=2)};")
    with open(os.path.join(work, "manifests.ts"), "w") as out:
        out.write("\n".join(lines) + "\n")
    p = subprocess.run([os.path.join(work, "node_modules", ".bin", "tsc"), "--noEmit", "--strict", "--skipLibCheck",
                        "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
                        "manifests.ts"], cwd=work, capture_output=True, text=True, timeout=300)
    out = (p.stdout + p.stderr).strip()
    print(f"tsc: {out or 'no errors'}")
    f.check(p.returncode == 0, "every object type-checks against the API's types (no unknown fields)")
    return f.finish("check_k8s_schema")


if __name__ == "__main__":
    sys.exit(main())
