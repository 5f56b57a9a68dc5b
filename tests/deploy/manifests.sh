#!/usr/bin/env bash
# Checks deploy/kubernetes and deploy/compose.yaml offline: every Kubernetes manifest validates
# (strict: no unknown fields) against the API schemas that `kubernetes-validate` 1.37.0 (PyPI)
# ships; the kustomization lists every manifest; the gateway configuration in the ConfigMap is
# accepted by `switchyard validate-config`; termination waits longer than the gateway's shutdown
# grace; the compose file has two gateway replicas on PostgreSQL, an S3 server, migrations run
# once before the gateways, health checks and volumes, and the configuration it mounts validates.
#
#   tests/deploy/manifests.sh <switchyard binary>
set -euo pipefail
bin=$(realpath "${1:?usage: manifests.sh <switchyard binary>}")
root=$(cd "$(dirname "$0")/../.." && pwd)
tools=${SWITCHYARD_TOOLS:-$HOME/.cache/switchyard-tools}
venv=$tools/k8s-validate
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
if ! "$venv/bin/python" -c 'import importlib.metadata as m; assert m.version("kubernetes-validate") == "1.37.0"; import yaml' 2>/dev/null; then
  rm -rf "$venv"
  python3 -m venv "$venv" && "$venv/bin/pip" install -q kubernetes-validate==1.37.0 \
    || die "cannot install kubernetes-validate==1.37.0 from PyPI"
fi
k8s=$root/deploy/kubernetes
manifests=$(cd "$k8s" && ls *.yaml | grep -v '^kustomization.yaml$')
(cd "$k8s" && "$venv/bin/kubernetes-validate" --strict --quiet $manifests) \
  || die "a manifest in deploy/kubernetes does not validate"
echo "ok: $(echo "$manifests" | wc -l) manifests validate against the Kubernetes 1.37 schemas (strict)"

work=$(mktemp -d /tmp/switchyard-manifests.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$venv/bin/python" - "$k8s" "$root/deploy/compose.yaml" "$work" <<'PY' || die "the deployment files are inconsistent"
import pathlib, sys, tomllib, yaml
k8s, compose_path, work = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
docs = {p.name: list(yaml.safe_load_all(p.read_text())) for p in k8s.glob("*.yaml")}
kust = docs.pop("kustomization.yaml")[0]
assert sorted(kust["resources"]) == sorted(docs), f"kustomization lists {kust['resources']}, files are {sorted(docs)}"
by_kind = {d["kind"]: d for ds in docs.values() for d in ds}
for kind in ["Deployment", "Service", "ConfigMap", "Secret", "Job", "PodDisruptionBudget"]:
    assert kind in by_kind, f"no {kind}"
dep = by_kind["Deployment"]["spec"]
assert dep["replicas"] == 3, dep["replicas"]
c = dep["template"]["spec"]["containers"][0]
assert c["readinessProbe"]["httpGet"]["path"] == "/readyz" and c["livenessProbe"]["httpGet"]["path"] == "/healthz"
assert c["resources"]["requests"], "resource requests"
toml_text = by_kind["ConfigMap"]["data"]["switchyard.toml"]
(work / "k8s.toml").write_text(toml_text)
grace_ms = tomllib.loads(toml_text)["server"]["shutdown_grace_ms"]
term_s = dep["template"]["spec"]["terminationGracePeriodSeconds"]
assert term_s * 1000 > grace_ms, f"terminationGracePeriodSeconds {term_s} s is not longer than shutdown_grace_ms {grace_ms}"
print(f"ok: Deployment of 3 with /readyz and /healthz probes; termination {term_s} s > shutdown grace {grace_ms} ms; kustomization lists every manifest")

compose = yaml.safe_load(compose_path.read_text())
svc = compose["services"]
gateways = [n for n, s in svc.items() if "serve" in (s.get("command") or [])]
assert len(gateways) == 2, f"gateway replicas: {gateways}"
for g in gateways:
    deps = svc[g]["depends_on"]
    assert deps["migrate"]["condition"] == "service_completed_successfully", deps
    assert "postgres://" in svc[g]["environment"]["SWITCHYARD__STORE__URL"]
assert "migrate" in svc["migrate"]["command"] and svc["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
for s in ["postgres", "minio"]:
    assert "healthcheck" in svc[s], f"{s} has no health check"
assert {"pgdata", "s3data"} <= set(compose["volumes"]), compose["volumes"]
mounted = {v.split(":")[0] for g in gateways for v in svc[g]["volumes"] if v.startswith("./")}
(work / "mounted").write_text("".join(str((compose_path.parent / m).resolve()) + "\n" for m in sorted(mounted)))
print(f"ok: compose has {gateways} on PostgreSQL, MinIO, migrations once, health checks, volumes")
PY
env SWITCHYARD__STORE__URL=postgres://u:p@db/switchyard "$bin" validate-config "$work/k8s.toml" >/dev/null \
  || die "the ConfigMap's switchyard.toml does not validate"
echo "ok: the ConfigMap's configuration validates"
while read -r mounted; do
  env SWITCHYARD__STORE__URL=postgres://u:p@db/switchyard "$bin" validate-config "$mounted" >/dev/null \
    || die "$mounted (mounted by compose) does not validate"
  echo "ok: $mounted (mounted by compose) validates"
done < "$work/mounted"
