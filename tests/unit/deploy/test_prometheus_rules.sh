#!/usr/bin/env bash
# deploy/prometheus/sextant-alerts.yaml: every rule is well formed, names only metrics the
# daemon registers, and (with promtool) passes `promtool check rules` and fires on the
# series of prometheus_rules_test.yaml.
set -euo pipefail
ROOT=${SEXTANT_SOURCE_DIR:-$(cd "$(dirname "$0")/../../.." && pwd)}
RULES=$ROOT/deploy/prometheus/sextant-alerts.yaml

python3 - "$RULES" "$ROOT" <<'PY'
import os, re, sys, yaml
rules_path, root = sys.argv[1], sys.argv[2]
doc = yaml.safe_load(open(rules_path))
# The metric names the daemon registers (sx_metrics_counter/gauge/histogram literals).
known = set()
for d in ("server", "api", "storage"):
    for dirpath, _, files in os.walk(os.path.join(root, d)):
        for f in files:
            if f.endswith(".c"):
                known.update(re.findall(r'"(sextant_[a-z0-9_]+)"', open(os.path.join(dirpath, f)).read()))
errors, names = [], set()
for g in doc.get("groups") or []:
    for r in g.get("rules") or []:
        a = r.get("alert")
        if not a:
            errors.append("a rule without alert: %r" % r)
            continue
        if a in names:
            errors.append("%s: defined twice" % a)
        names.add(a)
        if not isinstance(r.get("expr"), str) or not r["expr"].strip():
            errors.append("%s: no expr" % a)
            continue
        if (r.get("labels") or {}).get("severity") not in ("warning", "critical"):
            errors.append("%s: labels.severity must be warning or critical" % a)
        if not (r.get("annotations") or {}).get("summary"):
            errors.append("%s: no annotations.summary" % a)
        for m in re.findall(r"\b(sextant_[a-z0-9_]+)", r["expr"]):
            if m not in known:
                errors.append("%s: metric %s is not exported by the daemon" % (a, m))
for want in ("SextantXdsNackRateHigh", "SextantProxyDisconnected", "SextantDeploymentFailed",
             "SextantReplicaLost"):
    if want not in names:
        errors.append("missing alert " + want)
if errors:
    sys.exit("\n".join(errors))
print("%d rules well formed" % len(names))
PY

if command -v promtool >/dev/null; then
    promtool check rules "$RULES"
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    cp "$RULES" "$ROOT/tests/unit/deploy/prometheus_rules_test.yaml" "$work/"
    promtool test rules "$work/prometheus_rules_test.yaml"
else
    echo "promtool not installed (Debian package prometheus): rule evaluation not checked"
fi
