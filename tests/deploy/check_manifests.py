#!/usr/bin/env python3
"""Renders every kustomization under deploy/k8s (the shards; with the
Prometheus Operator's objects; with TLS) and checks the essentials against the
server's and the CLI's real flags (`--help`), the image's Containerfile,
entrypoint and healthcheck, the Prometheus rules and docs/deploy.md.

Usage: check_manifests.py GPHKV_SERVER_BIN GPHKV_CLI_BIN
"""

import glob
import json
import os
import re
import sys

import yaml

import deploylib as d

HEALTHCHECK = "/opt/gphkv/bin/gphkv-healthcheck"


def subset(small, big):
    return bool(small) and all(big.get(k) == v for k, v in small.items())


def check_kustomizations(f):
    for here in d.kustomizations():
        rel = os.path.relpath(os.path.join(here, "kustomization.yaml"), d.REPO)
        doc = yaml.safe_load(open(os.path.join(here, "kustomization.yaml")))
        for res in doc.get("resources", []):
            target = os.path.normpath(os.path.join(here, res))
            ok = os.path.isfile(target) or os.path.isfile(os.path.join(target, "kustomization.yaml"))
            f.check(ok, f"{rel}: resource {res} does not exist")
        for patch in doc.get("patches", []):
            f.check(os.path.isfile(os.path.join(here, patch.get("path", ""))), f"{rel}: patch {patch} is not a file")
        for img in doc.get("images", []):
            f.check(img.get("name") == "gphkv", f"{rel}: images entry {img} does not name the container image 'gphkv'")
    # Every manifest file is a resource or a patch of some kustomization.
    used = set()
    for here in d.kustomizations():
        doc = yaml.safe_load(open(os.path.join(here, "kustomization.yaml")))
        used |= {os.path.normpath(os.path.join(here, r)) for r in doc.get("resources", [])}
        used |= {os.path.normpath(os.path.join(here, p["path"])) for p in doc.get("patches", [])}
    for path in glob.glob(os.path.join(d.DEPLOY, "k8s", "**", "*.yaml"), recursive=True):
        if os.path.basename(path) != "kustomization.yaml":
            f.check(path in used, f"{os.path.relpath(path, d.REPO)} is in no kustomization")


def containerfile():
    text = open(os.path.join(d.DEPLOY, "Containerfile")).read()
    user = re.search(r"^USER (\d+):(\d+)", text, re.M)
    expose = [int(p) for p in re.findall(r"(\d+)/tcp", " ".join(re.findall(r"^EXPOSE (.*)$", text, re.M)))]
    env = dict(re.findall(r"(GPHKV_[A-Z_]+)=(\S+)", text))
    return text, (int(user.group(1)), int(user.group(2))) if user else None, expose, env


def check_statefulset(f, rel, sts, flags, env_flags, image_user, default_grpc, default_metrics, tls):
    """The shards' StatefulSet against the server's flags, the image and the
    entrypoint: returns (container, {port name: port}, pod labels) or None."""
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    pod_labels = spec["template"]["metadata"].get("labels", {})
    annotations = spec["template"]["metadata"].get("annotations", {})
    f.check(subset(spec["selector"]["matchLabels"], pod_labels), f"{rel}: selector does not match the pod labels")
    containers = {c["name"]: c for c in pod["containers"]}
    c = containers.get("gphkv")
    if not f.check(c is not None, f"{rel}: no container named gphkv"):
        return None

    # The flags the server will get: the entrypoint's variables, then args.
    env = {e["name"]: e for e in c.get("env", [])}
    given = {}
    for name, e in env.items():
        if name in env_flags and "value" in e:
            given[env_flags[name]] = e["value"]
        f.check(name.startswith("GPHKV_") and (name in env_flags or name in d.healthcheck_env()
                                               or name == "GPHKV_MEMORY_LIMIT_BYTES"),
                f"{rel}: env {name} is read by neither the entrypoint nor the healthcheck")
    for arg in c.get("args", []):
        m = re.fullmatch(r"--([a-z_]+)(?:=(.*))?", arg)
        if f.check(m is not None, f"{rel}: argument {arg!r} is not a --flag=value"):
            f.check(m.group(1) in flags, f"{rel}: --{m.group(1)} is not a flag of gphkv-server (--help)")
            given[m.group(1)] = m.group(2)
    f.check(c.get("command") is None, f"{rel}: command would bypass the image's entrypoint")
    f.check(given.get("backend") in ("cuda", "auto"), f"{rel}: a GPU pod should run --backend=cuda (or auto)")

    grpc_port = d.port_of(given.get("listen_address", flags["listen_address"]))
    metrics_port = d.port_of(given.get("metrics_address", flags["metrics_address"]))
    f.check(grpc_port == default_grpc and metrics_port == default_metrics,
            f"{rel}: ports {grpc_port}/{metrics_port} differ from the image's defaults {default_grpc}/{default_metrics}")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    f.check(ports.get("grpc") == grpc_port, f"{rel}: containerPort grpc {ports.get('grpc')} != --listen_address port {grpc_port}")
    f.check(ports.get("metrics") == metrics_port, f"{rel}: containerPort metrics {ports.get('metrics')} != --metrics_address port {metrics_port}")
    f.check(annotations.get("prometheus.io/scrape") == "true", f"{rel}: pod lacks prometheus.io/scrape: \"true\"")
    f.check(annotations.get("prometheus.io/port") == str(metrics_port), f"{rel}: prometheus.io/port != {metrics_port}")
    f.check(annotations.get("prometheus.io/path") == "/metrics", f"{rel}: prometheus.io/path != /metrics")

    # Probes: all through gRPC health on the serving port; natively in plain
    # text, through the image's healthcheck (the CLI) under TLS.
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        p = c.get(probe)
        if f.check(p is not None, f"{rel}: no {probe}"):
            handlers = [h for h in ("grpc", "exec", "httpGet", "tcpSocket") if h in p]
            if tls:
                f.check(handlers == ["exec"] and p["exec"].get("command") == [HEALTHCHECK],
                        f"{rel}: under TLS {probe} must exec {HEALTHCHECK} alone (Kubernetes' gRPC probe has no TLS), is {p}")
            else:
                f.check(handlers == ["grpc"] and p.get("grpc", {}).get("port") == grpc_port,
                        f"{rel}: {probe} must be a grpc probe on port {grpc_port}, is {p}")
            f.check(p.get("timeoutSeconds", 1) < p.get("periodSeconds", 10), f"{rel}: {probe} timeout >= period")
    live, start = c.get("livenessProbe", {}), c.get("startupProbe", {})
    f.check(live.get("failureThreshold", 3) * live.get("periodSeconds", 10) >= 20,
            f"{rel}: liveness would restart a shard after less than 20 s of failed checks")
    f.check(start.get("failureThreshold", 3) * start.get("periodSeconds", 10) >= 60,
            f"{rel}: startupProbe allows less than 60 s for the first table allocation")

    # Resources: one GPU, requests and limits, Guaranteed QoS.
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    f.check(str(lim.get("nvidia.com/gpu")) == "1", f"{rel}: limits must hold nvidia.com/gpu: 1")
    f.check(str(req.get("nvidia.com/gpu", lim.get("nvidia.com/gpu"))) == str(lim.get("nvidia.com/gpu")),
            f"{rel}: nvidia.com/gpu requests != limits (Kubernetes refuses that)")
    for r in ("cpu", "memory"):
        f.check(r in req and r in lim, f"{rel}: {r} needs both a request and a limit")
        f.check(str(req.get(r)) == str(lim.get(r)), f"{rel}: {r} request != limit (not Guaranteed QoS)")
    f.check(any(t.get("key") == "nvidia.com/gpu" for t in pod.get("tolerations", [])),
            f"{rel}: no toleration for the nvidia.com/gpu taint of GPU nodes")

    # The memory cap flag tied to the memory limit.
    limit = d.parse_k8s_quantity(lim.get("memory", "0"))
    if "GPHKV_MEMORY_PERCENT" in env:
        f.check("GPHKV_MEMORY" not in env and "memory" not in [a.split("=")[0].lstrip("-") for a in c.get("args", [])],
                f"{rel}: GPHKV_MEMORY_PERCENT is shadowed by an explicit --memory/GPHKV_MEMORY")
        percent = int(env["GPHKV_MEMORY_PERCENT"]["value"])
        ref = env.get("GPHKV_MEMORY_LIMIT_BYTES", {}).get("valueFrom", {}).get("resourceFieldRef", {})
        f.check(ref.get("resource") == "limits.memory" and ref.get("containerName") == "gphkv"
                and str(ref.get("divisor", "1")) == "1",
                f"{rel}: GPHKV_MEMORY_LIMIT_BYTES must come from the Downward API's limits.memory of container gphkv, in bytes")
        memory = limit // 100 * percent
    else:
        memory = d.parse_byte_size(given.get("memory", flags["memory"]))
    f.check(0 < memory <= limit * 0.85,
            f"{rel}: --memory {memory} leaves under 15% of the {limit}-byte memory limit as headroom")

    # Termination: the grace period outlives preStop plus the server's drain.
    grace_ms = int(given.get("shutdown_grace_ms", flags.get("shutdown_grace_ms", "0")))
    f.check("shutdown_grace_ms" in flags, "gphkv-server has no --shutdown_grace_ms: what bounds its drain?")
    pre = c.get("lifecycle", {}).get("preStop", {})
    pre_s = 0
    if "exec" in pre:
        m = re.fullmatch(r"(?:/bin/)?sleep", pre["exec"]["command"][0])
        pre_s = int(pre["exec"]["command"][1]) if m else 0
    elif "sleep" in pre:
        pre_s = int(pre["sleep"]["seconds"])
    tgp = pod.get("terminationGracePeriodSeconds", 30)
    f.check(tgp >= pre_s + grace_ms / 1000 + 10,
            f"{rel}: terminationGracePeriodSeconds {tgp} < preStop {pre_s} s + drain {grace_ms / 1000} s + 10 s")

    # Security: the image's non-root user.
    sc = pod.get("securityContext", {})
    csc = c.get("securityContext", {})
    f.check(sc.get("runAsNonRoot") is True, f"{rel}: runAsNonRoot must be true")
    if image_user:
        f.check(sc.get("runAsUser") == image_user[0], f"{rel}: runAsUser {sc.get('runAsUser')} != the image's USER {image_user[0]}")
    f.check(csc.get("allowPrivilegeEscalation") is False, f"{rel}: allowPrivilegeEscalation must be false")
    f.check(csc.get("readOnlyRootFilesystem") is True, f"{rel}: readOnlyRootFilesystem should be true")
    f.check("ALL" in csc.get("capabilities", {}).get("drop", []), f"{rel}: capabilities should drop ALL")
    return c, ports, pod_labels


def check_tls(f, flags, env_flags, image_user, default_grpc, default_metrics):
    """deploy/k8s/tls: the StatefulSet still passes every check, with the
    probes on the healthcheck; the Secret is mounted read-only and the TLS
    variables name its files; the rest is the plain base's; the docs create
    the Secret the manifests mount, with the keys they read."""
    docs = d.render_kustomization(os.path.join(d.DEPLOY, "k8s", "tls"))
    stss = [(r, doc) for r, doc in docs if doc["kind"] == "StatefulSet"]
    if not f.check(len(stss) == 1, f"deploy/k8s/tls renders {len(stss)} StatefulSets, not one"):
        return
    rel, sts = stss[0]
    checked = check_statefulset(f, rel, sts, flags, env_flags, image_user, default_grpc, default_metrics, tls=True)
    if checked is None:
        return
    c = checked[0]
    pod = sts["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value", "") for e in c.get("env", [])}
    for var in ("GPHKV_TLS_CERT", "GPHKV_TLS_KEY", "GPHKV_TLS_CLIENT_CA"):
        f.check(var in env and var in env_flags, f"{rel}: {var} must be set (the entrypoint makes it a server flag)")
    f.check("GPHKV_TLS_CA" in env and "GPHKV_TLS_CA" in d.healthcheck_env(),
            f"{rel}: the healthcheck needs GPHKV_TLS_CA to trust the shard's certificate")
    secrets = {v["name"]: v["secret"] for v in pod.get("volumes", []) if "secret" in v}
    mounts = {m["name"]: m for m in c.get("volumeMounts", [])}
    secret_names = set()
    for name, secret in secrets.items():
        m = mounts.get(name)
        if not f.check(m is not None, f"{rel}: Secret volume {name} is not mounted"):
            continue
        secret_names.add(secret.get("secretName"))
        f.check(m.get("readOnly") is True, f"{rel}: the Secret {name} must be mounted read-only")
        for var in ("GPHKV_TLS_CERT", "GPHKV_TLS_KEY", "GPHKV_TLS_CLIENT_CA", "GPHKV_TLS_CA"):
            path = env.get(var, "")
            f.check(os.path.dirname(path) == m["mountPath"] and os.path.basename(path) in ("tls.crt", "tls.key", "ca.crt"),
                    f"{rel}: {var}={path} is not a file of the Secret at {m['mountPath']} (tls.crt, tls.key, ca.crt)")
        f.check(secret.get("defaultMode", 0o644) & 0o007 == 0, f"{rel}: the Secret's files must not be world-readable")
        f.check(pod.get("securityContext", {}).get("fsGroup") == image_user[1],
                f"{rel}: fsGroup must be the image's group {image_user[1]}, which then reads the Secret's files")
    f.check(len(secret_names) == 1, f"{rel}: expected one Secret volume, found {secret_names}")
    guide = open(os.path.join(d.REPO, "docs", "deploy.md")).read()
    for name in secret_names:
        # The command, with its continuation lines.
        made = re.search(r"kubectl create secret generic " + re.escape(str(name)) + r"\b(?:.*\\\n)*.*", guide)
        if f.check(made is not None, f"docs/deploy.md does not show how to create the Secret {name}"):
            for key in ("tls.crt", "tls.key", "ca.crt"):
                f.check(f"--from-file={key}=" in made.group(0), f"docs/deploy.md: the Secret {name} lacks {key}")
    others = sorted(json.dumps(doc, sort_keys=True) for _, doc in docs if doc["kind"] != "StatefulSet")
    base = sorted(json.dumps(doc, sort_keys=True) for _, doc in d.render_kustomization(os.path.join(d.DEPLOY, "k8s"))
                  if doc["kind"] != "StatefulSet")
    f.check(others == base, "deploy/k8s/tls changes more than the StatefulSet")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    f = d.Failures()
    flags = d.server_flags(sys.argv[1])
    cli = d.cli_flags(sys.argv[2])
    env_flags = d.entrypoint_env_flags()
    default_grpc = d.port_of(flags["listen_address"])
    default_metrics = d.port_of(flags["metrics_address"])

    # The image: ports, user, entrypoint and healthcheck as the manifests expect them.
    cf_text, image_user, expose, image_env = containerfile()
    # memcached's port is off by default in the server; the image turns it on.
    image_memcached = d.port_of(image_env.get("GPHKV_MEMCACHED_ADDRESS", ":0"))
    f.check(image_memcached == 11211, f"Containerfile: ENV GPHKV_MEMCACHED_ADDRESS on port {image_memcached}, not 11211")
    f.check(sorted(expose) == sorted([default_grpc, default_metrics, image_memcached]),
            f"Containerfile EXPOSE {expose} != the server's default ports {default_grpc}, {default_metrics} "
            f"and the image's memcached port {image_memcached}")
    f.check(image_user is not None and image_user[0] != 0, "Containerfile: USER must be a numeric non-root uid:gid")
    f.check(d.port_of(image_env.get("GPHKV_LISTEN_ADDRESS", ":0")) == default_grpc,
            "Containerfile: ENV GPHKV_LISTEN_ADDRESS is not on the server's default gRPC port")
    f.check(d.port_of(image_env.get("GPHKV_METRICS_ADDRESS", ":0")) == default_metrics,
            "Containerfile: ENV GPHKV_METRICS_ADDRESS is not on the server's default metrics port")
    f.check(re.search(r"^HEALTHCHECK .*\n?.*CMD \[\"/opt/gphkv/bin/gphkv-healthcheck\"\]", cf_text, re.M) is not None,
            "Containerfile: HEALTHCHECK must run gphkv-healthcheck")
    f.check('ENTRYPOINT ["/opt/gphkv/bin/gphkv-entrypoint"]' in cf_text, "Containerfile: ENTRYPOINT must be the entrypoint")
    for var, flag in env_flags.items():
        f.check(flag in flags, f"entrypoint.sh: {var} becomes --{flag}, which gphkv-server does not have")

    # The healthcheck (the image's, and the probes' under TLS) runs the CLI with real flags.
    for flag in re.findall(r"--([a-z_]+)=", open(os.path.join(d.DEPLOY, "healthcheck.sh")).read()) + ["tls"]:
        f.check(flag in cli, f"healthcheck.sh passes --{flag}, which the gphkv CLI does not have")

    check_kustomizations(f)
    # The shards plus the Prometheus Operator's objects: everything but TLS.
    docs = d.render_kustomization(os.path.join(d.DEPLOY, "k8s", "prometheus-operator"))
    f.check(len(docs) >= 6, f"expected the StatefulSet, 2 Services, PDB, ServiceMonitor, PrometheusRule; found {len(docs)} documents")
    for rel, doc in docs:
        f.check(all(k in doc for k in ("apiVersion", "kind")), f"{rel}: a document without apiVersion/kind")
        f.check(bool(doc.get("metadata", {}).get("name")), f"{rel}: {doc.get('kind')} without metadata.name")
    by_kind = {}
    for rel, doc in docs:
        by_kind.setdefault(doc.get("kind"), []).append((rel, doc))

    sts_list = by_kind.get("StatefulSet", [])
    if not f.check(len(sts_list) == 1, f"expected one StatefulSet, found {len(sts_list)}"):
        return f.finish("check_manifests")
    rel, sts = sts_list[0]
    checked = check_statefulset(f, rel, sts, flags, env_flags, image_user, default_grpc, default_metrics, tls=False)
    if checked is None:
        return f.finish("check_manifests")
    c, ports, pod_labels = checked
    spec = sts["spec"]
    f.check(spec.get("replicas", 1) >= 2,
            f"{rel}: replicas {sts['spec'].get('replicas', 1)}: the manifests run N shards, clients route keys over them")

    # Services: the headless one for shard addresses, a ClusterIP one for single-shard use.
    services = {doc["metadata"]["name"]: (r, doc) for r, doc in by_kind.get("Service", [])}
    named = {p["name"] for p in c.get("ports", [])}
    head = services.get(spec.get("serviceName"))
    if f.check(head is not None, f"{rel}: serviceName {spec.get('serviceName')} is not a Service here"):
        hr, hs = head
        f.check(hs["spec"].get("clusterIP") == "None", f"{hr}: the StatefulSet's Service must be headless")
        f.check(hs["spec"].get("publishNotReadyAddresses") is True,
                f"{hr}: shards must stay addressable while not ready")
        f.check({p["name"] for p in hs["spec"]["ports"]} >= {"grpc", "metrics"}, f"{hr}: needs grpc and metrics ports")
    cluster = [s for n, s in services.items() if s[1]["spec"].get("clusterIP") != "None"]
    f.check(len(cluster) == 1 and cluster[0][1]["spec"].get("type", "ClusterIP") == "ClusterIP",
            "expected one ClusterIP Service for single-shard use")
    for name, (sr, s) in services.items():
        f.check(subset(s["spec"].get("selector", {}), pod_labels), f"{sr}: selector does not match the shard pods")
        for p in s["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            f.check(tp in named or tp in ports.values(), f"{sr}: targetPort {tp} is not a port of the container")
            if p["name"] in ports:
                f.check(p["port"] == ports[p["name"]], f"{sr}: port {p['name']} is {p['port']}, the container's is {ports[p['name']]}")
    for r, pdb in by_kind.get("PodDisruptionBudget", []):
        f.check(subset(pdb["spec"]["selector"]["matchLabels"], pod_labels), f"{r}: selector does not match the shard pods")

    # Prometheus Operator: the ServiceMonitor finds the metrics port; the
    # PrometheusRule is the rules file.
    for r, sm in by_kind.get("ServiceMonitor", []):
        hits = [s for _, s in services.values() if subset(sm["spec"]["selector"]["matchLabels"], s["metadata"].get("labels", {}))]
        f.check(len(hits) == 1, f"{r}: selects {len(hits)} Services, wants exactly one (the headless one)")
        for ep in sm["spec"]["endpoints"]:
            f.check(all(ep["port"] in {p["name"] for p in s["spec"]["ports"]} for s in hits),
                    f"{r}: endpoint port {ep['port']} is not on the selected Service")
            f.check(ep.get("path", "/metrics") == "/metrics", f"{r}: path != /metrics")
            f.check({"sourceLabels": ["__meta_kubernetes_pod_name"], "targetLabel": "instance"} in ep.get("relabelings", []),
                    f"{r}: instance should be the pod's stable name (the shard), as in prometheus-kubernetes.yml")
    f.check(len(by_kind.get("ServiceMonitor", [])) == 1, "expected one ServiceMonitor")
    rules = yaml.safe_load(open(os.path.join(d.DEPLOY, "prometheus", "rules", "gphkv.rules.yml")))
    prs = by_kind.get("PrometheusRule", [])
    f.check(len(prs) == 1 and prs[0][1]["spec"]["groups"] == rules["groups"],
            "the PrometheusRule's groups differ from deploy/prometheus/rules/gphkv.rules.yml")

    check_tls(f, flags, env_flags, image_user, default_grpc, default_metrics)
    return f.finish("check_manifests")


if __name__ == "__main__":
    sys.exit(main())
