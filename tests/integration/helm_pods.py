"""Pods the Helm chart renders, run as containers on the local Docker engine, as a kubelet
would run them as far as one engine can: the pod spec's image, command, args and env (values,
the downward API's fields, Secret keys from the rendered Secrets), its init containers
first, its volumes (a claim from a volumeClaimTemplate or an emptyDir is a Docker volume
given the pod's fsGroup; a ConfigMap is a read-only directory of its keys, a Secret one of
its decoded keys with the volume's mode and the fsGroup as group), its security
context (user, read-only root, dropped capabilities, no privilege escalation), and the
service account's token and CA when the pod mounts them (for the stand-in API server).

Each pod's container has the pod name as hostname, as in Kubernetes, and its stable DNS name
`<statefulset>-<i>.<headless service>.<namespace>.svc.cluster.local` as network alias; the
pods behind a ClusterIP Service carry the Service's DNS name as an alias too (Docker's DNS
answers with all of them), and a NodePort Service's port is published on 127.0.0.1.
Not emulated: scheduling, probes driving restarts (the tests poll readiness themselves),
and Services' load balancing."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from base64 import b64decode
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.compose_stack import docker

BASE_IMAGE = "odradek-test-base:bookworm"
TAG = "helm-test"
SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
PREFIX = "helm-"
ROOT = Path(__file__).resolve().parents[2]


def build_images(targets: list[str]) -> None:
    """odradek-<target>:helm-test from services/Dockerfile on the local base image."""
    for target in targets:
        result = subprocess.run(
            ["docker", "build", "-q", "-f", "services/Dockerfile", "--target", target,
             "--build-arg", f"BASE_IMAGE={BASE_IMAGE}", "-t", f"odradek-{target}:{TAG}", "."],
            cwd=ROOT, env={"DOCKER_BUILDKIT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"},
            capture_output=True, text=True, timeout=900, check=False)
        if result.returncode != 0:
            raise AssertionError(f"docker build {target}: {result.stderr[-3000:]}")


@dataclass
class Api:
    """How pods that mount a service account token reach the stand-in API server."""

    host: str
    port: int
    token_dir: Path


@dataclass
class PodRunner:
    """Runs the pods of rendered releases on one Docker network."""

    network: str
    objects: list[dict[str, Any]] = field(default_factory=list)
    api: Api | None = None
    containers: list[str] = field(default_factory=list)
    volumes: set[str] = field(default_factory=set)
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="helm-pods-")))

    def create_network(self) -> str:
        """The network, created anew; returns its gateway (the host, seen from a pod)."""
        self.remove_network()
        docker("network", "create", self.network)
        return docker("network", "inspect", "--format",
                      "{{(index .IPAM.Config 0).Gateway}}", self.network).stdout.strip()

    def remove_network(self) -> None:
        docker("network", "rm", self.network, check=False)

    def add(self, objects: list[dict[str, Any]]) -> None:
        self.objects.extend(objects)

    def find(self, kind: str, name: str) -> dict[str, Any]:
        return next(o for o in self.objects if o["kind"] == kind and o["metadata"]["name"] == name)

    def secret_value(self, ref: dict[str, str]) -> str:
        secret = self.find("Secret", ref["name"])
        return b64decode(secret["data"][ref["key"]]).decode()

    def aliases(self, labels: dict[str, str], namespace: str) -> list[str]:
        """The DNS names of the ClusterIP Services whose selector picks these labels."""
        return [f"{s['metadata']['name']}.{namespace}.svc.cluster.local"
                for s in self.objects if s["kind"] == "Service"
                and s["spec"].get("clusterIP") != "None" and s["spec"].get("type") != "NodePort"
                and s["spec"]["selector"].items() <= labels.items()]

    def published(self, pod: str, spec: dict[str, Any]) -> list[str]:
        """-p flags of the NodePort Services that select exactly this pod: the node port on
        127.0.0.1 to the target port (a name resolved through the container's ports)."""
        named = {p["name"]: p["containerPort"] for c in spec["containers"]
                 for p in c.get("ports", [])}
        flags = []
        for s in self.objects:
            if s["kind"] == "Service" and s["spec"].get("type") == "NodePort" and \
                    s["spec"]["selector"].get("statefulset.kubernetes.io/pod-name") == pod:
                for port in s["spec"]["ports"]:
                    target = named.get(port["targetPort"], port["targetPort"])
                    flags += ["-p", f"127.0.0.1:{port['nodePort']}:{target}"]
        return flags

    def volume(self, name: str, fs_group: int | None, image: str) -> str:
        """A Docker volume with the pod's fsGroup on it, as the kubelet sets it."""
        if name not in self.volumes:
            docker("volume", "create", name)
            self.volumes.add(name)
            if fs_group is not None:
                docker("run", "--rm", "--user", "0", "--entrypoint", "sh", "-v", f"{name}:/v",
                       image, "-c", f"chgrp {fs_group} /v && chmod 2775 /v")
        return name

    def config_map_dir(self, name: str) -> Path:
        directory = self.scratch / "configmaps" / name
        directory.mkdir(parents=True, exist_ok=True)
        for key, text in self.find("ConfigMap", name)["data"].items():
            (directory / key).write_text(text)
        directory.chmod(0o755)
        return directory

    def secret_dir(self, volume: dict[str, Any], fs_group: int | None) -> Path:
        """A Secret volume as the kubelet writes it: a file per key (or per `items` entry,
        at its path), mode `defaultMode` (0644 unless set), owned by root and the pod's
        fsGroup."""
        name = volume["secretName"]
        data = self.find("Secret", name)["data"]
        paths = {i["key"]: i["path"] for i in volume.get("items", [])} or {k: k for k in data}
        directory = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.scratch))
        for key, file in paths.items():
            path = directory / file
            path.write_bytes(b64decode(data[key]))
            os.chown(path, 0, fs_group or 0)
            path.chmod(volume.get("defaultMode", 0o644))
        os.chown(directory, 0, fs_group or 0)
        directory.chmod(0o750 if fs_group is not None else 0o755)
        return directory

    def run_pod(self, pod: dict[str, Any], name: str, namespace: str, node: str,
                hostname: str, aliases: list[str]) -> str:
        """Runs the pod (init containers to completion, then its one container, detached);
        returns the container's name."""
        spec = pod["spec"]
        security = spec.get("securityContext", {})
        fs_group = security.get("fsGroup")
        volume_flags: dict[str, list[str]] = {}
        main_image = spec["containers"][0]["image"]
        for volume in spec.get("volumes", []):
            if "emptyDir" in volume:
                source = self.volume(f"{PREFIX}{name}-{volume['name']}", fs_group, main_image)
                volume_flags[volume["name"]] = ["--mount", f"type=volume,src={source},dst={{}}"]
            elif "configMap" in volume:
                source = str(self.config_map_dir(volume["configMap"]["name"]))
                volume_flags[volume["name"]] = ["--mount", f"type=bind,src={source},dst={{}}"]
            elif "secret" in volume:
                source = str(self.secret_dir(volume["secret"], fs_group))
                volume_flags[volume["name"]] = ["--mount",
                                                f"type=bind,src={source},dst={{}},readonly"]
        for claim in pod.get("claims", []):
            source = self.volume(f"{PREFIX}{name}-{claim}", fs_group, main_image)
            volume_flags[claim] = ["--mount", f"type=volume,src={source},dst={{}}"]
        environment = {"POD_NAME": name, "POD_NAMESPACE": namespace, "NODE_NAME": node}
        for init in spec.get("initContainers", []):
            argv = self.container_argv(spec, init, environment, volume_flags)
            result = docker("run", "--rm", "--network", self.network, "--hostname", hostname,
                            *argv, timeout=120, check=False)
            if result.returncode != 0:
                raise AssertionError(f"init container {init['name']} of {name}: "
                                     f"{result.stdout}{result.stderr}")
        container = PREFIX + name
        docker("rm", "-f", container, check=False)
        argv = self.container_argv(spec, spec["containers"][0], environment, volume_flags)
        docker("run", "-d", "--name", container, "--network", self.network,
               "--hostname", hostname, *(f"--network-alias={a}" for a in aliases),
               *self.published(name, spec), *argv)
        self.containers.append(container)
        return container

    def container_argv(self, spec: dict[str, Any], container: dict[str, Any],
                       fields: dict[str, str], volumes: dict[str, list[str]]) -> list[str]:
        """`docker run` flags and arguments of one container of a pod spec."""
        pod_security = spec.get("securityContext", {})
        security = {**pod_security, **container.get("securityContext", {})}
        flags = ["--user", f"{security['runAsUser']}:{security.get('runAsGroup', 0)}"]
        if "fsGroup" in pod_security:
            flags += ["--group-add", str(pod_security["fsGroup"])]
        if security.get("readOnlyRootFilesystem"):
            flags.append("--read-only")
        if security.get("allowPrivilegeEscalation") is False:
            flags += ["--security-opt", "no-new-privileges"]
        for capability in security.get("capabilities", {}).get("drop", []):
            flags += ["--cap-drop", capability]
        if "memory" in container.get("resources", {}).get("limits", {}):
            flags += ["--memory", container["resources"]["limits"]["memory"].replace("i", "")]
        for mount in container.get("volumeMounts", []):
            (kind, spec_text) = volumes[mount["name"]]
            text = spec_text.format(mount["mountPath"])
            flags += [kind, text + (",readonly" if mount.get("readOnly") else "")]
        if spec.get("automountServiceAccountToken") and self.api is not None:
            flags += ["--mount", f"type=bind,src={self.api.token_dir},dst={SERVICE_ACCOUNT},"
                      "readonly", "--env", f"KUBERNETES_SERVICE_HOST={self.api.host}",
                      "--env", f"KUBERNETES_SERVICE_PORT={self.api.port}"]
        for variable in container.get("env", []):
            flags += ["--env", f"{variable['name']}={self.env_value(variable, fields)}"]
        command = container.get("command")
        if command:
            flags += ["--entrypoint", command[0]]
        return [*flags, container["image"], *(command or [])[1:], *container.get("args", [])]

    def env_value(self, variable: dict[str, Any], fields: dict[str, str]) -> str:
        if "value" in variable:
            return str(variable["value"])
        source = variable["valueFrom"]
        if "fieldRef" in source:
            return {"metadata.name": fields["POD_NAME"],
                    "metadata.namespace": fields["POD_NAMESPACE"],
                    "spec.nodeName": fields["NODE_NAME"]}[source["fieldRef"]["fieldPath"]]
        return self.secret_value(source["secretKeyRef"])

    def run_statefulset_pod(self, statefulset: str, index: int, namespace: str,
                            node: str = "node-0") -> str:
        sts = self.find("StatefulSet", statefulset)
        name = f"{statefulset}-{index}"
        template = sts["spec"]["template"]
        labels = {**template["metadata"]["labels"], "statefulset.kubernetes.io/pod-name": name}
        dns = f"{name}.{sts['spec']['serviceName']}.{namespace}.svc.cluster.local"
        pod = {"spec": template["spec"],
               "claims": [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]]}
        return self.run_pod(pod, name, namespace, node, hostname=name,
                            aliases=[dns, *self.aliases(labels, namespace)])

    def run_deployment_pod(self, deployment: str, index: int, namespace: str) -> str:
        template = self.find("Deployment", deployment)["spec"]["template"]
        name = f"{deployment}-{index}"
        return self.run_pod({"spec": template["spec"]}, name, namespace, "node-0",
                            hostname=name, aliases=[])

    def run_to_completion(self, kind: str, name: str, namespace: str,
                          timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A Pod (e.g. the `helm test` hook) run in the foreground; its exit status."""
        spec = self.find(kind, name)["spec"]
        fs_group = spec.get("securityContext", {}).get("fsGroup")
        volumes = {v["name"]: ["--mount", f"type=bind,src={self.secret_dir(v['secret'], fs_group)}"
                                          ",dst={},readonly"] if "secret" in v
                   else ["--tmpfs", "{}"] for v in spec["volumes"]}
        argv = self.container_argv(spec, spec["containers"][0],
                                   {"POD_NAME": name, "POD_NAMESPACE": namespace,
                                    "NODE_NAME": "node-0"}, volumes)
        return docker("run", "--rm", "--network", self.network, "--hostname", name, *argv,
                      timeout=timeout, check=False)

    def ready(self, container: str, port: int) -> bool:
        """The readiness probe: GET /health on the metrics port answers 200."""
        probe = ("import sys, urllib.request; sys.exit(urllib.request.urlopen("
                 f"'http://127.0.0.1:{port}/health', timeout=5).status != 200)")
        return docker("exec", container, "python3", "-c", probe, check=False).returncode == 0

    def logs(self, container: str) -> str:
        result = docker("logs", "--tail", "60", container, check=False)
        return result.stdout + result.stderr

    def remove(self) -> None:
        for container in self.containers:
            docker("rm", "-f", "-v", container, check=False)
        for volume in self.volumes:
            docker("volume", "rm", "-f", volume, check=False)
        self.remove_network()
        shutil.rmtree(self.scratch, ignore_errors=True)
