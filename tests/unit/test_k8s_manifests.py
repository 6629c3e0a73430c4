"""The Kubernetes manifests of deploy/k8s, as `kubectl apply -k` sends them: each kustomization
rendered offline (tests/support/kustomize.py, checked against a real kustomize where one is
installed), standard kinds valid for Kubernetes 1.33 (strict, kubernetes-validate's bundled
schemas), SparkApplications, PodMonitors and PrometheusRules valid for their operators' CRDs
(tests/data, vendored), and all of it agreeing with the code, the image and the alert rules."""

from __future__ import annotations

import base64
import copy
import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from connectors.avro import REGISTRY_ENV
from connectors.kafka import BOOTSTRAP_ENV
from connectors.kafka_settings import (
    KAFKA_ENV_PREFIX,
    REGISTRY_ENV_PREFIX,
    env_settings,
    is_secret,
    kafka_settings,
    spark_options,
)
from tests.support import kustomize
from trending.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
DATA = ROOT / "tests" / "data"
ALERTS = ROOT / "deploy" / "prometheus" / "alerts.yml"
PROMETHEUS_CONFIGS = ("prometheus.yml", "compose.yml")  # deploy/prometheus, where they exist
TRENDING = Path(sys.executable).parent / "trending"
KUBERNETES_VERSION = "1.33.0"
JOBS = ("hashtags", "sensors")
WAYS = ("deployment", "spark-operator")  # the kustomizations that run the jobs
TARGETS = (*WAYS, "monitoring")  # every `kubectl apply -k deploy/k8s/<target>`
NAMESPACE = "trending"
SECRETS_FILE = K8S / "base" / "kafka.env"
SECRETS_EXAMPLE = K8S / "base" / "kafka.env.example"
# What the tests put in kafka.env (never the user's file, should one be there).
TEST_SECRETS = {
    "TRENDING_KAFKA_SASL_PASSWORD": "a-password",
    "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO": "trending:a-password",
}
CRDS = {
    ("sparkoperator.k8s.io/v1beta2", "SparkApplication"): "sparkoperator.k8s.io_sparkapplications",
    ("monitoring.coreos.com/v1", "PodMonitor"): "monitoring.coreos.com_podmonitors",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_prometheusrules",
}
CRD_SOURCES = {
    "sparkoperator.k8s.io_sparkapplications": (
        "https://github.com/kubeflow/spark-operator",
        "charts/spark-operator-chart/crds/sparkoperator.k8s.io_sparkapplications.yaml",
    ),
    "monitoring.coreos.com_podmonitors": (
        "https://github.com/prometheus-operator/prometheus-operator",
        "example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml",
    ),
    "monitoring.coreos.com_prometheusrules": (
        "https://github.com/prometheus-operator/prometheus-operator",
        "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml",
    ),
}
# The container names Spark gives the pods it makes (spark.kubernetes.*.container.name unset).
SPARK_CONTAINERS = {"driver": "spark-kubernetes-driver", "executor": "spark-kubernetes-executor"}


def secrets_text(secrets: Mapping[str, str] = TEST_SECRETS) -> str:
    return "".join(f"{key}={value}\n" for key, value in secrets.items())


@functools.cache
def rendered(target: str) -> tuple[dict[str, Any], ...]:
    """What `kubectl apply -k deploy/k8s/<target>` applies, with TEST_SECRETS as kafka.env."""
    files = {SECRETS_FILE: secrets_text()}
    return tuple(kustomize.build(K8S / target, files))


def all_rendered() -> list[tuple[str, dict[str, Any]]]:
    """(target, object) for every object of every target, each object once."""
    seen, found = set(), []
    for target in TARGETS:
        for obj in rendered(target):
            key = (obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
            if key not in seen:
                seen.add(key)
                found.append((target, obj))
    return found


def files() -> list[tuple[str, dict[str, Any]]]:
    """(file relative to deploy/k8s, object) for every object of the resource files, as
    committed (the kustomizations and their configurations excluded)."""
    found = []
    for path in sorted(K8S.rglob("*.yaml")):
        if path.name in kustomize.KUSTOMIZATION_FILES or path.name == "kustomizeconfig.yaml":
            continue
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                found.append((str(path.relative_to(K8S)), document))
    return found


def objects(target: str, kind: str) -> list[dict[str, Any]]:
    return [o for o in rendered(target) if o["kind"] == kind]


def named(target: str, kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects(target, kind) if o["metadata"]["name"] == name]
    return found


def deployment(job: str) -> dict[str, Any]:
    return named("deployment", "Deployment", f"trending-{job}")


def spark_application(job: str) -> dict[str, Any]:
    return named("spark-operator", "SparkApplication", f"trending-{job}")


def container(job: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = deployment(job)["spec"]["template"]["spec"]["containers"]
    assert len(found) == 1
    return found[0]


def generated_secret(target: str) -> dict[str, Any]:
    [secret] = objects(target, "Secret")
    return secret


def secret_values(target: str) -> dict[str, str]:
    data = generated_secret(target)["data"]
    return {key: base64.b64decode(value).decode() for key, value in data.items()}


def job_arguments() -> Iterator[tuple[str, str, list[str]]]:
    """(job, way, the arguments `trending` gets) for every job."""
    for job in JOBS:
        yield job, "deployment", [str(a) for a in container(job)["args"]]
        yield job, "spark-operator", [str(a) for a in spark_application(job)["spec"]["arguments"]]


def test_each_way_of_running_applies_the_base_and_both_jobs() -> None:
    for way in WAYS:
        assert [n["metadata"]["name"] for n in objects(way, "Namespace")] == [NAMESPACE]
        assert [c["metadata"]["name"] for c in objects(way, "ConfigMap")] == ["trending-config"]
        assert generated_secret(way)["metadata"]["name"].startswith("trending-secrets-")
    for job in JOBS:
        assert deployment(job)["spec"]["replicas"] == 1
        assert spark_application(job)["spec"]["mode"] == "cluster"
    assert not objects("deployment", "SparkApplication")
    assert not objects("spark-operator", "Deployment")
    assert {o["kind"] for o in rendered("monitoring")} == {"PodMonitor", "PrometheusRule"}


def test_every_resource_file_is_in_a_kustomization() -> None:
    """No file that `kubectl apply -k` would silently leave out."""
    listed = set()
    for kustomization in K8S.rglob("kustomization.yaml"):
        spec = yaml.safe_load(kustomization.read_text())
        for entry in [*spec.get("resources", []), *spec.get("configurations", [])]:
            listed.add((kustomization.parent / entry).resolve())
    for path in K8S.rglob("*.yaml"):
        assert path.name == "kustomization.yaml" or path.resolve() in listed, path


def test_no_secret_is_committed() -> None:
    """The Secret comes from kafka.env, which the user writes and git ignores; the example
    beside it names the keys and holds no value."""
    assert not [f for f, o in files() if o["kind"] == "Secret"]
    base = yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text())
    [generator] = base["secretGenerator"]
    assert generator["name"] == "trending-secrets"
    assert generator["envs"] == [SECRETS_FILE.name]
    assert SECRETS_FILE.name in (K8S / "base" / ".gitignore").read_text().splitlines()
    lines = [line for line in SECRETS_EXAMPLE.read_text().splitlines() if line[:1] != "#"]
    assert lines and all(line.endswith("=") for line in lines), "the example holds no value"


def example_keys() -> list[str]:
    text = SECRETS_EXAMPLE.read_text()
    return [line.split("=")[0] for line in text.splitlines() if line and not line.startswith("#")]


def test_a_missing_secrets_file_stops_the_build_naming_it(tmp_path: Path) -> None:
    copied = copy_of_k8s(tmp_path, secrets=None)
    with pytest.raises(kustomize.KustomizeError, match=r"base/kafka\.env: no such file"):
        kustomize.build(copied / "deployment")


def copy_of_k8s(tmp_path: Path, secrets: Mapping[str, str] | None = TEST_SECRETS) -> Path:
    """deploy/k8s copied into tmp_path, with kafka.env holding ``secrets`` (None: no file)."""
    copied = tmp_path / "k8s"
    shutil.copytree(K8S, copied, ignore=shutil.ignore_patterns(SECRETS_FILE.name))
    if secrets is not None:
        (copied / "base" / SECRETS_FILE.name).write_text(secrets_text(secrets))
    return copied


def user_overlay(k8s: Path, way: str, images: list[dict[str, str]]) -> Path:
    """An overlay of the user's own beside deploy/k8s, setting the images."""
    overlay = k8s.parent / "mine" / way
    overlay.mkdir(parents=True)
    spec = {"resources": [os.path.relpath(k8s / way, overlay)], "images": images}
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(spec))
    return overlay


IMAGE_OVERRIDES = {
    "deployment": [{"name": "trending", "newName": "registry.example/x/trending", "newTag": "7"}],
    "spark-operator": [
        {"name": "trending-spark", "newName": "registry.example/x/trending-spark", "newTag": "7"}
    ],
}


def kustomize_command() -> list[str] | None:
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    return None


def sorted_objects(found: Any) -> list[dict[str, Any]]:
    found = [o for o in found if o is not None]
    return sorted(found, key=lambda o: (o["kind"], o["metadata"]["name"]))


@pytest.mark.tools
def test_the_renderer_agrees_with_kustomize(tmp_path: Path) -> None:
    """The objects tests/support/kustomize.py renders are the ones kustomize renders (kubectl's
    or kustomize's own, where either is installed), for every target, an empty secrets file,
    an overlay that sets the images, and a build that lacks the secrets file."""
    command = kustomize_command()
    if command is None:
        pytest.skip("neither kustomize nor kubectl is installed")
    folders = []
    for number, secrets in enumerate((TEST_SECRETS, {})):
        k8s = copy_of_k8s(tmp_path / str(number), secrets)
        folders += [k8s / target for target in TARGETS]
    k8s = copy_of_k8s(tmp_path / "overlays")
    folders += [user_overlay(k8s, way, images) for way, images in IMAGE_OVERRIDES.items()]
    for folder in folders:
        done = subprocess.run([*command, str(folder)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        theirs = sorted_objects(yaml.safe_load_all(done.stdout))
        assert sorted_objects(kustomize.build(folder)) == theirs, folder
    missing = copy_of_k8s(tmp_path / "missing", secrets=None)
    done = subprocess.run(
        [*command, str(missing / "deployment")], capture_output=True, text=True, check=False
    )
    assert done.returncode != 0
    assert "base/kafka.env" in done.stderr


def test_the_renderer_refuses_what_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("namePrefix: x-\nresources: []\n")
    with pytest.raises(kustomize.KustomizeError, match="namePrefix"):
        kustomize.build(tmp_path)


@pytest.mark.parametrize(
    ("target", "index"),
    [
        (target, i)
        for i, (target, o) in enumerate(all_rendered())
        if (o["apiVersion"], o["kind"]) not in CRDS
    ],
)
def test_standard_objects_are_valid_for_kubernetes(target: str, index: int) -> None:
    _, document = all_rendered()[index]
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_strict_validation_rejects_an_unknown_field() -> None:
    """What the test above relies on: a misspelled field fails, it is not ignored."""
    document = copy.deepcopy(deployment("hashtags"))
    document["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def closed(schema: Any) -> Any:
    """``schema`` with no properties beyond those it declares (the API server would prune an
    unknown field of a structural schema silently: here it fails)."""
    if isinstance(schema, list):
        return [closed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: closed(value) for key, value in schema.items()}
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        result["additionalProperties"] = False
    return result


def python_patterns(schema: Any) -> Any:
    """``schema`` with its patterns (Go's RE2) in Python's syntax: a flag group such as ``(?i)``
    after the ``^`` moved before it (Python takes global flags only at the start)."""
    if isinstance(schema, list):
        return [python_patterns(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result = {key: python_patterns(value) for key, value in schema.items()}
    if isinstance(schema.get("pattern"), str):
        result["pattern"] = re.sub(r"^\^(\(\?[a-z]+\))", r"\1^", schema["pattern"])
    return result


@functools.cache
def crd_validator(api_version: str, kind: str) -> jsonschema.Draft4Validator:
    crd = yaml.safe_load((DATA / f"{CRDS[api_version, kind]}.yaml").read_text())
    group, version = api_version.split("/")
    assert crd["spec"]["group"] == group
    assert crd["spec"]["names"]["kind"] == kind
    [served] = [v for v in crd["spec"]["versions"] if v["name"] == version]
    schema = closed(python_patterns(served["schema"]["openAPIV3Schema"]))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


@pytest.mark.parametrize("name", sorted(CRD_SOURCES))
def test_the_vendored_crds_name_their_source(name: str) -> None:
    header = (DATA / f"{name}.yaml").read_text()[:500]
    repository, path = CRD_SOURCES[name]
    assert repository in header
    assert path in header
    assert re.search(r"commit [0-9a-f]{40}", header)


@pytest.mark.parametrize(
    ("target", "index"),
    [
        (target, i)
        for i, (target, o) in enumerate(all_rendered())
        if (o["apiVersion"], o["kind"]) in CRDS
    ],
)
def test_custom_resources_are_valid_for_their_crds(target: str, index: int) -> None:
    _, document = all_rendered()[index]
    crd_validator(document["apiVersion"], document["kind"]).validate(document)
    assert set(document) == {"apiVersion", "kind", "metadata", "spec"}


def test_the_crd_check_rejects_an_unknown_or_wrong_field() -> None:
    validator = crd_validator(*next(iter(CRDS)))
    misspelled = copy.deepcopy(spark_application("hashtags"))
    misspelled["spec"]["driver"]["memmory"] = "2g"
    assert not validator.is_valid(misspelled)
    wrong_type = copy.deepcopy(spark_application("hashtags"))
    wrong_type["spec"]["restartPolicy"]["type"] = "Sometimes"
    assert not validator.is_valid(wrong_type)
    monitor = copy.deepcopy(pod_monitor())
    monitor["spec"]["podMetricsEndpoints"][0]["prot"] = "metrics"
    assert not crd_validator(monitor["apiVersion"], "PodMonitor").is_valid(monitor)


@pytest.mark.parametrize(("job", "way", "argv"), list(job_arguments()))
def test_container_commands_exist(job: str, way: str, argv: list[str]) -> None:
    done = subprocess.run(
        [str(TRENDING), *argv, "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    args = build_parser().parse_args(argv)
    assert argv[:2] == ["run", job]
    assert args.metrics_host == "0.0.0.0"
    if way == "deployment":
        assert (args.master or "").startswith("local["), args.master
    else:  # the operator's spark-submit chose the master and the deploy mode
        assert args.master is None
        assert not any("spark.master" in a or "deployMode" in a for a in argv)


@pytest.mark.parametrize("job", JOBS)
def test_spark_applications_put_the_images_jars_on_the_class_path(job: str) -> None:
    """spark-submit starts the driver's JVM, so the job adds no jar: the connectors and the
    project's jars must be on the driver's and the executors' class path, from the folders the
    spark-operator image copies them to."""
    conf = spark_application(job)["spec"]["sparkConf"]
    stage = dockerfile_stage("spark-operator")
    jars_env = re.search(r"\bTRENDING_JARS_DIR=(\S+)", stage)
    assert jars_env
    copied = {line.split()[-1] for line in stage.splitlines() if line.startswith("COPY ")}
    for role in ("driver", "executor"):
        entries = conf[f"spark.{role}.extraClassPath"].split(":")
        assert entries == [f"{jars_env[1]}/{group}/*" for group in ("connectors", "udf")]
        assert {entry.removesuffix("/*") for entry in entries} <= copied
    chosen_by_the_operator = ("spark.master", "spark.submit.deployMode", "spark.jars")
    assert not [key for key in conf if key.startswith(chosen_by_the_operator)]


def mounts_and_claims(job: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(way, the claim, the checkpoint's mount path) per job."""
    pod = deployment(job)["spec"]["template"]["spec"]
    volumes = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    [mount] = container(job)["volumeMounts"]
    claim = named("deployment", "PersistentVolumeClaim", volumes[mount["name"]])
    yield "deployment", claim, mount["mountPath"]
    spec = spark_application(job)["spec"]
    volumes = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]}
    driver, executor = spec["driver"]["volumeMounts"], spec["executor"]["volumeMounts"]
    assert driver == executor, "the driver and the executors see the same checkpoint"
    [mount] = driver
    claim = named("spark-operator", "PersistentVolumeClaim", volumes[mount["name"]])
    yield "spark-operator", claim, mount["mountPath"]


@pytest.mark.parametrize("job", JOBS)
def test_checkpoints_are_on_persistent_volume_claims(job: str) -> None:
    checkpoints = {
        way: Path(build_parser().parse_args(argv).checkpoint)
        for name, way, argv in job_arguments()
        if name == job
    }
    claims = set()
    for way, claim, mount_path in mounts_and_claims(job):
        assert checkpoints[way].is_relative_to(mount_path), way
        modes = claim["spec"]["accessModes"]
        assert modes == (["ReadWriteMany"] if way == "spark-operator" else ["ReadWriteOnce"])
        claims.add(claim["metadata"]["name"])
    assert len(claims) == 2
    assert deployment(job)["spec"]["strategy"]["type"] == "Recreate", "one owner at a time"


@pytest.mark.parametrize("job", JOBS)
def test_resources_and_grace_periods_are_set(job: str) -> None:
    resources = container(job)["resources"]
    for bound in ("requests", "limits"):
        assert set(resources[bound]) == {"cpu", "memory"}, bound
    args = build_parser().parse_args([str(a) for a in container(job)["args"]])
    cores = re.fullmatch(r"local\[(\d+)\]", args.master)
    assert cores and int(cores[1]) <= int(resources["limits"]["cpu"])
    # SIGTERM: the batch in progress may take --shutdown-timeout, then Spark stops
    grace = deployment(job)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace >= args.shutdown_timeout / 1000 + 30
    spec = spark_application(job)["spec"]
    for role in ("driver", "executor"):
        assert {"cores", "coreLimit", "memory"} <= spec[role].keys(), role
        assert spec[role]["terminationGracePeriodSeconds"] >= 30, role
    driver_args = build_parser().parse_args([str(a) for a in spec["arguments"]])
    assert (
        spec["driver"]["terminationGracePeriodSeconds"] >= driver_args.shutdown_timeout / 1000 + 30
    )
    assert spec["executor"]["instances"] >= 1
    assert spec["restartPolicy"]["type"] == "OnFailure"


def pods() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(job, way, pod) for every pod the manifests make, pod as {namespace, labels,
    annotations, container, ports}; the Spark operator's pods as Spark makes them."""
    for job in JOBS:
        template = deployment(job)["spec"]["template"]
        pod = {
            "namespace": deployment(job)["metadata"]["namespace"],
            "labels": template["metadata"]["labels"],
            "annotations": template["metadata"]["annotations"],
            "container": container(job)["name"],
            "ports": container(job)["ports"],
        }
        yield job, "deployment", pod
        application = spark_application(job)
        for role in ("driver", "executor"):
            spec = application["spec"][role]
            pod = {
                "namespace": application["metadata"]["namespace"],
                "labels": spec["labels"],
                "annotations": spec.get("annotations", {}),
                "container": SPARK_CONTAINERS[role],
                "ports": spec.get("ports", []),
            }
            yield job, f"spark-operator {role}", pod


def metrics_pods() -> Iterator[tuple[str, str, dict[str, Any]]]:
    return ((j, w, p) for j, w, p in pods() if not w.endswith("executor"))


@pytest.mark.parametrize("job", JOBS)
def test_metrics_are_scraped_and_served(job: str) -> None:
    arguments = {way: argv for name, way, argv in job_arguments() if name == job}
    for _, way, pod in (p for p in metrics_pods() if p[0] == job):
        port = build_parser().parse_args(arguments[way.split()[0]]).metrics_port
        notes = pod["annotations"]
        assert notes["prometheus.io/scrape"] == "true"
        assert notes["prometheus.io/port"] == str(port)
        assert notes["prometheus.io/path"] == "/metrics"
        [metrics] = [p for p in pod["ports"] if p["name"] == "metrics"]
        assert metrics["containerPort"] == port
        services = objects(way.split()[0], "Service")
        [service] = [s for s in services if s["spec"]["selector"].items() <= pod["labels"].items()]
        [service_port] = service["spec"]["ports"]
        assert service_port["targetPort"] == "metrics"
    selector = deployment(job)["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment(job)["spec"]["template"]["metadata"]["labels"].items()
    probe = container(job)["readinessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/metrics", "metrics")


def env_sources() -> Iterator[tuple[str, str, list[dict[str, Any]]]]:
    for job in JOBS:
        yield "deployment", job, container(job)["envFrom"]
        yield "spark-operator", job, spark_application(job)["spec"]["driver"]["envFrom"]


def test_every_pod_gets_the_config_map_and_the_generated_secret() -> None:
    """By the names kustomize gave them: the Secret's carries a hash of its content."""
    for way, job, sources in env_sources():
        names = {s.get("configMapRef", s.get("secretRef", {})).get("name") for s in sources}
        config = named(way, "ConfigMap", "trending-config")
        secret = generated_secret(way)
        assert names == {config["metadata"]["name"], secret["metadata"]["name"]}, (way, job)


def test_config_names_are_the_settings_the_code_reads() -> None:
    data = named("deployment", "ConfigMap", "trending-config")["data"]
    assert BOOTSTRAP_ENV in data
    plain = {k for k in data if not k.startswith((KAFKA_ENV_PREFIX, REGISTRY_ENV_PREFIX))}
    assert plain <= {BOOTSTRAP_ENV, REGISTRY_ENV}
    assert not any(is_secret(k) for k in env_settings(data, KAFKA_ENV_PREFIX)), "in the Secret"
    assert not any(is_secret(k) for k in env_settings(data, REGISTRY_ENV_PREFIX))
    assert data[REGISTRY_ENV].startswith(("http://", "https://"))


def test_secrets_are_secret_settings_the_code_reads() -> None:
    """The keys kafka.env.example names, which the Secret is generated with."""
    keys = example_keys()
    assert keys == list(TEST_SECRETS)
    for way in WAYS:
        assert secret_values(way) == TEST_SECRETS
    secret = secret_values("deployment")
    assert all(k.startswith((KAFKA_ENV_PREFIX, REGISTRY_ENV_PREFIX)) for k in secret)
    password = secret["TRENDING_KAFKA_SASL_PASSWORD"]
    assert env_settings(secret, KAFKA_ENV_PREFIX) == {"sasl.password": password}
    names = [*env_settings(secret, KAFKA_ENV_PREFIX), *env_settings(secret, REGISTRY_ENV_PREFIX)]
    assert names == ["sasl.password", "basic.auth.user.info"]
    assert all(is_secret(name) for name in names)


def test_config_and_secret_together_make_working_kafka_settings() -> None:
    """The Kafka settings a pod ends up with, and what Spark's Kafka source gets from them."""
    environ = {
        **named("deployment", "ConfigMap", "trending-config")["data"],
        **secret_values("deployment"),
    }
    settings = kafka_settings(None, None, environ)
    assert settings["sasl.password"] == environ["TRENDING_KAFKA_SASL_PASSWORD"]
    options = spark_options(settings)
    assert options["kafka.security.protocol"] == settings["security.protocol"]
    assert "kafka.sasl.jaas.config" in options


def dockerfile_stage(name: str | None) -> str:
    """The text of deploy/Dockerfile's stage ``name`` (None: the last, default one)."""
    text = (ROOT / "deploy" / "Dockerfile").read_text()
    parts = re.split(r"^(?=FROM )", text, flags=re.MULTILINE)[1:]
    if name is None:
        return parts[-1]
    [stage] = [p for p in parts if p.splitlines()[0].endswith(f" AS {name}")]
    return stage


IMAGES = {"deployment": "trending", "spark-operator": "trending-spark"}


def image_fields(obj: Mapping[str, Any]) -> list[str]:
    if obj["kind"] == "Deployment":
        return [c["image"] for c in obj["spec"]["template"]["spec"]["containers"]]
    if obj["kind"] == "SparkApplication":
        return [obj["spec"]["image"]]
    return []


def test_resources_name_their_image_and_kustomize_sets_the_tag() -> None:
    version = importlib.metadata.version("trending")
    committed = {image for _, o in files() for image in image_fields(o)}
    assert committed == set(IMAGES.values()), "no tag or registry in the resources"
    for way, image in IMAGES.items():
        spec = yaml.safe_load((K8S / way / "kustomization.yaml").read_text())
        assert spec["images"] == [{"name": image, "newName": image, "newTag": version}]
        assert {i for o in rendered(way) for i in image_fields(o)} == {f"{image}:{version}"}


def test_an_overlay_sets_the_images(tmp_path: Path) -> None:
    k8s = copy_of_k8s(tmp_path)
    for way, [override] in IMAGE_OVERRIDES.items():
        built = kustomize.build(user_overlay(k8s, way, [override]))
        images = {i for o in built for i in image_fields(o)}
        assert images == {f"{override['newName']}:{override['newTag']}"}, way


def test_images_are_the_ones_deploy_dockerfile_builds() -> None:
    spark_stage = dockerfile_stage("spark-operator")
    default_stage = dockerfile_stage(None)
    requires = importlib.metadata.requires("trending") or []
    pyspark = next(d for d in requires if d.startswith("pyspark=="))
    spark_version = pyspark.removeprefix("pyspark==")
    for job in JOBS:
        spec = spark_application(job)["spec"]
        assert spec["sparkVersion"] == spark_version
        assert spark_stage.startswith(f"FROM spark:{spark_version}-")
        assert spec["type"] == "Python"
        main = spec["mainApplicationFile"].removeprefix("local://")
        assert f"> {main}" in spark_stage, "the image makes the application file"
        user = spec["driver"]["podSecurityContext"]["runAsUser"]
        assert f"\nUSER {user}\n" in spark_stage
        assert spec["executor"]["podSecurityContext"]["runAsUser"] == user
        pod = deployment(job)["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert f"\nUSER {pod['securityContext']['runAsUser']}:" in default_stage


def test_the_application_file_runs_the_cli() -> None:
    script = re.search(r"printf '([^']*)'", dockerfile_stage("spark-operator"))
    assert script
    code = script[1].replace("\\n", "\n")
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "sensors", "--help"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: ")


def test_everything_is_in_one_namespace() -> None:
    for target, obj in all_rendered():
        if obj["kind"] == "Namespace":
            assert obj["metadata"]["name"] == NAMESPACE
        else:
            assert obj["metadata"]["namespace"] == NAMESPACE, (target, obj["metadata"])
    for target in TARGETS:
        spec = yaml.safe_load((K8S / target / "kustomization.yaml").read_text())
        assert spec["namespace"] == NAMESPACE
    for path, document in files():  # `kubectl apply -f FILE` too
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == NAMESPACE, path


def test_drivers_may_create_their_executors() -> None:
    for job in JOBS:
        account = spark_application(job)["spec"]["driver"]["serviceAccount"]
        named("spark-operator", "ServiceAccount", account)
        bindings = [
            b
            for b in objects("spark-operator", "RoleBinding")
            if {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} in b["subjects"]
        ]
        [binding] = bindings
        role = named("spark-operator", "Role", binding["roleRef"]["name"])
        assert any("pods" in r["resources"] and "create" in r["verbs"] for r in role["rules"])


# The metrics: the PodMonitor, the PrometheusRule and the alert rules' selectors.


def pod_monitor() -> dict[str, Any]:
    [monitor] = objects("monitoring", "PodMonitor")
    return monitor


def alert_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(ALERTS.read_text())["groups"]
    return groups


def test_the_prometheus_rule_holds_the_alert_rules() -> None:
    [rule] = objects("monitoring", "PrometheusRule")
    assert rule["spec"]["groups"] == alert_groups(), "deploy/prometheus/alerts.yml differs"


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a Kubernetes label selector (matchLabels, matchExpressions) selects ``labels``."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values")
        present = key in labels
        matched = {
            "In": present and labels.get(key) in (values or []),
            "NotIn": not present or labels.get(key) not in (values or []),
            "Exists": present,
            "DoesNotExist": not present,
        }[operator]
        if not matched:
            return False
    return True


def scrape_targets(monitor: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """(job, way, target labels) of every target Prometheus gets from ``monitor``: the labels
    the Prometheus operator gives a PodMonitor's targets (pkg/prometheus/promcfg.go: namespace,
    container, pod, job: the pod's jobLabel label or NAMESPACE/NAME, endpoint). The pod's name
    and the instance (its address) are not known here."""
    spec = monitor["spec"]
    namespace = monitor["metadata"]["namespace"]
    allowed = spec.get("namespaceSelector", {}).get("matchNames", [namespace])
    found = []
    for job, way, pod in pods():
        if pod["namespace"] not in allowed or not selects(spec["selector"], pod["labels"]):
            continue
        for endpoint in spec["podMetricsEndpoints"]:
            if not any(p["name"] == endpoint["port"] for p in pod["ports"]):
                continue
            default_job = f"{namespace}/{monitor['metadata']['name']}"
            labels = {
                "namespace": pod["namespace"],
                "container": pod["container"],
                "job": pod["labels"].get(spec.get("jobLabel", "")) or default_job,
                "endpoint": endpoint["port"],
            }
            found.append((job, way, labels))
    return found


def test_the_pod_monitor_scrapes_each_jobs_metrics_pod() -> None:
    monitor = pod_monitor()
    targets = scrape_targets(monitor)
    assert sorted((job, way) for job, way, _ in targets) == sorted(
        (job, way) for job, way, _ in metrics_pods()
    ), "every metrics pod once, no executor"
    [endpoint] = monitor["spec"]["podMetricsEndpoints"]
    for _, _, pod in metrics_pods():
        [port] = [p for p in pod["ports"] if p["name"] == endpoint["port"]]
        assert str(port["containerPort"]) == pod["annotations"]["prometheus.io/port"]
        assert endpoint["path"] == pod["annotations"]["prometheus.io/path"]
    assert {labels["job"] for _, _, labels in targets} == {f"trending-{job}" for job in JOBS}


_SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^{}]*)\}")
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)')
# The labels a scrape gives every series (the rest come from the metrics themselves).
TARGET_LABELS = {"job", "instance", "namespace", "pod", "container", "endpoint", "service"}


def selectors(expr: str) -> list[tuple[str, list[tuple[str, str, str]]]]:
    """(metric name or "", [(label, operator, value)]) of every ``{...}`` selector in a PromQL
    expression."""
    found = []
    for match in _SELECTOR.finditer(expr):
        body, matchers, at = match[2], [], 0
        while body[at:].strip():
            matcher = _MATCHER.match(body, at)
            assert matcher, f"cannot read the selector {match[0]!r}"
            matchers.append((matcher[1], matcher[2], matcher[3].encode().decode("unicode_escape")))
            at = matcher.end()
        found.append((match[1] or "", matchers))
    return found


def matches(operator: str, pattern: str, value: str) -> bool:
    """PromQL's label matchers (regular expressions anchored at both ends)."""
    return {
        "=": value == pattern,
        "!=": value != pattern,
        "=~": re.fullmatch(pattern, value) is not None,
        "!~": re.fullmatch(pattern, value) is None,
    }[operator]


def test_the_selector_reader() -> None:
    expr = 'sum by (job) (rate(x_total{job=~"trending-.*", reason!="a\\"b"}[5m])) > on (job) up{}'
    assert selectors(expr) == [
        ("x_total", [("job", "=~", "trending-.*"), ("reason", "!=", 'a"b')]),
        ("up", []),
    ]
    assert matches("=~", "trending-.*", "trending-hashtags")
    assert not matches("=~", "trending-.*", "trending/trending")
    assert not matches("=~", "trending", "trending-x"), "anchored"


def alert_mismatches(targets: list[tuple[str, str, dict[str, str]]]) -> list[str]:
    """What each alert rule selects on the scraped targets' labels and the targets (job, way,
    labels) do not have."""
    wrong = []
    for group in alert_groups():
        for rule in group["rules"]:
            for metric, matchers in selectors(rule["expr"]):
                for label, operator, pattern in matchers:
                    if label not in TARGET_LABELS:
                        assert metric != "up", f"{rule['alert']}: up has only target labels"
                        continue
                    for job, way, labels in targets:
                        assert label in labels, f"{rule['alert']}: {label} is not known here"
                        if not matches(operator, pattern, labels[label]):
                            wrong.append(
                                f"{rule['alert']}: {label}{operator}{pattern!r} misses "
                                f"{labels[label]!r} ({job}, {way})"
                            )
    return wrong


def static_targets() -> list[tuple[str, str, dict[str, str]]]:
    """(job, config, target labels) of deploy/prometheus's scrape configs (compose, a host)."""
    found = []
    for name in PROMETHEUS_CONFIGS:
        path = ROOT / "deploy" / "prometheus" / name
        if path.is_file():
            for scrape in yaml.safe_load(path.read_text())["scrape_configs"]:
                job = scrape["job_name"]
                found.append((job.removeprefix("trending-"), name, {"job": job}))
    return found


def test_alert_selectors_match_the_labels_of_every_scrape() -> None:
    """The rules select the jobs by labels both the PodMonitor and deploy/prometheus's scrape
    configs give them; and the rules do select on them (or every series would do)."""
    used = {
        label
        for group in alert_groups()
        for rule in group["rules"]
        for _, matchers in selectors(rule["expr"])
        for label, _, _ in matchers
    }
    assert "job" in used
    assert alert_mismatches(scrape_targets(pod_monitor())) == []
    static = static_targets()
    assert {job for job, _, _ in static} >= set(JOBS)
    assert alert_mismatches(static) == []


def test_a_pod_monitor_without_the_job_label_fails_the_check() -> None:
    """What the test above relies on: the PodMonitor's default job label (NAMESPACE/NAME) is
    not what the rules select."""
    monitor = copy.deepcopy(pod_monitor())
    del monitor["spec"]["jobLabel"]
    wrong = alert_mismatches(scrape_targets(monitor))
    assert any("TrendingJobDown" in line and "trending/trending" in line for line in wrong)


def test_the_docs_apply_each_target_and_name_the_secrets_file() -> None:
    docs = (ROOT / "docs" / "deploy" / "kubernetes.md").read_text()
    for target in TARGETS:
        assert f"kubectl apply -k deploy/k8s/{target}" in docs, target
    assert f"cp deploy/k8s/base/{SECRETS_EXAMPLE.name} deploy/k8s/base/{SECRETS_FILE.name}" in docs
    for key in example_keys():
        assert f"`{key}`" in docs, key
