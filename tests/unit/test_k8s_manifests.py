"""The Kubernetes manifests of deploy/k8s: standard kinds valid for Kubernetes 1.33 (strict,
kubernetes-validate's bundled schemas), each SparkApplication valid for the Kubeflow Spark
operator's CRD (tests/data, vendored), and both agreeing with the code and the image."""

from __future__ import annotations

import copy
import importlib.metadata
import os
import re
import subprocess
import sys
from collections.abc import Iterator
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
from trending.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
K8S = ROOT / "deploy" / "k8s"
CRD = ROOT / "tests" / "data" / "sparkoperator.k8s.io_sparkapplications.yaml"
TRENDING = Path(sys.executable).parent / "trending"
KUBERNETES_VERSION = "1.33.0"
JOBS = ("hashtags", "sensors")
SPARK_APPLICATION = ("sparkoperator.k8s.io/v1beta2", "SparkApplication")
NAMESPACE = "trending"


def manifests() -> list[tuple[str, dict[str, Any]]]:
    """(file relative to deploy/k8s, object) for every object in deploy/k8s."""
    found = []
    for path in sorted(K8S.rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document is not None:
                found.append((str(path.relative_to(K8S)), document))
    return found


def objects(kind: str) -> list[dict[str, Any]]:
    return [o for _, o in manifests() if o["kind"] == kind]


def named(kind: str, name: str) -> dict[str, Any]:
    [found] = [o for o in objects(kind) if o["metadata"]["name"] == name]
    return found


def standard() -> list[tuple[str, dict[str, Any]]]:
    return [(f, o) for f, o in manifests() if (o["apiVersion"], o["kind"]) != SPARK_APPLICATION]


def deployment(job: str) -> dict[str, Any]:
    return named("Deployment", f"trending-{job}")


def spark_application(job: str) -> dict[str, Any]:
    return named("SparkApplication", f"trending-{job}")


def container(job: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = deployment(job)["spec"]["template"]["spec"]["containers"]
    assert len(found) == 1
    return found[0]


def job_arguments() -> Iterator[tuple[str, str, list[str]]]:
    """(job, where, the arguments `trending` gets) for every job manifest."""
    for job in JOBS:
        yield job, "deployment", [str(a) for a in container(job)["args"]]
        yield job, "spark-operator", [str(a) for a in spark_application(job)["spec"]["arguments"]]


def test_the_manifests_hold_both_ways_of_running_each_job() -> None:
    files = {f for f, _ in manifests()}
    for job in JOBS:
        assert f"deployment/{job}.yaml" in files
        assert f"spark-operator/{job}.yaml" in files
        assert deployment(job)["spec"]["replicas"] == 1
        assert spark_application(job)["spec"]["mode"] == "cluster"
    assert {"base/namespace.yaml", "base/config.yaml", "base/secret.yaml"} <= files


@pytest.mark.parametrize(
    ("path", "index"),
    [(f, i) for i, (f, _) in enumerate(standard())],
)
def test_standard_objects_are_valid_for_kubernetes(path: str, index: int) -> None:
    _, document = standard()[index]
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


def crd_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    assert crd["spec"]["group"] == "sparkoperator.k8s.io"
    assert crd["spec"]["names"]["kind"] == "SparkApplication"
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta2"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return schema


def test_the_vendored_crd_names_its_source() -> None:
    header = CRD.read_text()[:400]
    assert "https://github.com/kubeflow/spark-operator" in header
    assert "charts/spark-operator-chart/crds/sparkoperator.k8s.io_sparkapplications.yaml" in header
    assert re.search(r"commit [0-9a-f]{40}", header)


@pytest.mark.parametrize("job", JOBS)
def test_spark_application_is_valid_for_the_operator_crd(job: str) -> None:
    application = spark_application(job)
    schema = closed(crd_schema())
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(application)
    assert set(application) == {"apiVersion", "kind", "metadata", "spec"}


def test_the_crd_check_rejects_an_unknown_or_wrong_field() -> None:
    validator = jsonschema.Draft4Validator(closed(crd_schema()))
    misspelled = copy.deepcopy(spark_application("hashtags"))
    misspelled["spec"]["driver"]["memmory"] = "2g"
    assert not validator.is_valid(misspelled)
    wrong_type = copy.deepcopy(spark_application("hashtags"))
    wrong_type["spec"]["restartPolicy"]["type"] = "Sometimes"
    assert not validator.is_valid(wrong_type)


@pytest.mark.parametrize(("job", "where", "argv"), list(job_arguments()))
def test_container_commands_exist(job: str, where: str, argv: list[str]) -> None:
    done = subprocess.run(
        [str(TRENDING), *argv, "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    args = build_parser().parse_args(argv)
    assert argv[:2] == ["run", job]
    assert args.metrics_host == "0.0.0.0"
    master = args.master or ""
    expected = "k8s://https://kubernetes.default.svc" if where == "spark-operator" else "local["
    assert master.startswith(expected), (where, master)


def mounts_and_claims(job: str) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(where, the claim, the checkpoint's mount path) per job manifest."""
    pod = deployment(job)["spec"]["template"]["spec"]
    volumes = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"]}
    [mount] = container(job)["volumeMounts"]
    yield "deployment", named("PersistentVolumeClaim", volumes[mount["name"]]), mount["mountPath"]
    spec = spark_application(job)["spec"]
    volumes = {v["name"]: v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"]}
    driver, executor = spec["driver"]["volumeMounts"], spec["executor"]["volumeMounts"]
    assert driver == executor, "the driver and the executors see the same checkpoint"
    [mount] = driver
    claim = named("PersistentVolumeClaim", volumes[mount["name"]])
    yield "spark-operator", claim, mount["mountPath"]


@pytest.mark.parametrize("job", JOBS)
def test_checkpoints_are_on_persistent_volume_claims(job: str) -> None:
    checkpoints = {
        where: Path(build_parser().parse_args(argv).checkpoint)
        for name, where, argv in job_arguments()
        if name == job
    }
    claims = set()
    for where, claim, mount_path in mounts_and_claims(job):
        assert checkpoints[where].is_relative_to(mount_path), where
        modes = claim["spec"]["accessModes"]
        assert modes == (["ReadWriteMany"] if where == "spark-operator" else ["ReadWriteOnce"])
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


def pods(job: str) -> Iterator[tuple[str, dict[str, Any], dict[str, Any], list[dict[str, Any]]]]:
    """(where, labels, annotations, ports) of each job's metrics pod."""
    template = deployment(job)["spec"]["template"]
    meta = template["metadata"]
    yield "deployment", meta["labels"], meta["annotations"], container(job)["ports"]
    driver = spark_application(job)["spec"]["driver"]
    yield "spark-operator", driver["labels"], driver["annotations"], driver["ports"]


@pytest.mark.parametrize("job", JOBS)
def test_metrics_are_scraped_and_served(job: str) -> None:
    arguments = {where: argv for name, where, argv in job_arguments() if name == job}
    services = objects("Service")
    for where, labels, notes, ports in pods(job):
        port = build_parser().parse_args(arguments[where]).metrics_port
        assert notes["prometheus.io/scrape"] == "true"
        assert notes["prometheus.io/port"] == str(port)
        assert notes["prometheus.io/path"] == "/metrics"
        [metrics] = [p for p in ports if p["name"] == "metrics"]
        assert metrics["containerPort"] == port
        [service] = [s for s in services if s["spec"]["selector"].items() <= labels.items()]
        [service_port] = service["spec"]["ports"]
        assert service_port["targetPort"] == "metrics"
    selector = deployment(job)["spec"]["selector"]["matchLabels"]
    assert selector.items() <= deployment(job)["spec"]["template"]["metadata"]["labels"].items()
    probe = container(job)["readinessProbe"]["httpGet"]
    assert (probe["path"], probe["port"]) == ("/metrics", "metrics")


def env_sources() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    for job in JOBS:
        yield f"deployment/{job}", container(job)["envFrom"]
        yield f"spark-operator/{job}", spark_application(job)["spec"]["driver"]["envFrom"]


def test_every_pod_gets_the_config_map_and_the_secret() -> None:
    config = named("ConfigMap", "trending-config")
    secret = named("Secret", "trending-secrets")
    for where, sources in env_sources():
        names = {s.get("configMapRef", s.get("secretRef", {})).get("name") for s in sources}
        assert names == {config["metadata"]["name"], secret["metadata"]["name"]}, where


def test_config_names_are_the_settings_the_code_reads() -> None:
    data = named("ConfigMap", "trending-config")["data"]
    assert BOOTSTRAP_ENV in data
    plain = {k for k in data if not k.startswith((KAFKA_ENV_PREFIX, REGISTRY_ENV_PREFIX))}
    assert plain <= {BOOTSTRAP_ENV, REGISTRY_ENV}
    assert not any(is_secret(k) for k in env_settings(data, KAFKA_ENV_PREFIX)), "in the Secret"
    assert not any(is_secret(k) for k in env_settings(data, REGISTRY_ENV_PREFIX))
    assert data[REGISTRY_ENV].startswith(("http://", "https://"))


def test_secrets_are_secret_settings_the_code_reads() -> None:
    secret = named("Secret", "trending-secrets")["stringData"]
    assert {"TRENDING_KAFKA_SASL_PASSWORD", "TRENDING_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO"} <= set(
        secret
    )
    assert all(k.startswith((KAFKA_ENV_PREFIX, REGISTRY_ENV_PREFIX)) for k in secret)
    password = secret["TRENDING_KAFKA_SASL_PASSWORD"]
    assert env_settings(secret, KAFKA_ENV_PREFIX) == {"sasl.password": password}
    names = [*env_settings(secret, KAFKA_ENV_PREFIX), *env_settings(secret, REGISTRY_ENV_PREFIX)]
    assert names == ["sasl.password", "basic.auth.user.info"]
    assert all(is_secret(name) for name in names)


def test_config_and_secret_together_make_working_kafka_settings() -> None:
    """The Kafka settings a pod ends up with, and what Spark's Kafka source gets from them."""
    environ = {
        **named("ConfigMap", "trending-config")["data"],
        **named("Secret", "trending-secrets")["stringData"],
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


def test_images_are_the_ones_deploy_dockerfile_builds() -> None:
    version = importlib.metadata.version("trending")
    spark_stage = dockerfile_stage("spark-operator")
    default_stage = dockerfile_stage(None)
    requires = importlib.metadata.requires("trending") or []
    pyspark = next(d for d in requires if d.startswith("pyspark=="))
    spark_version = pyspark.removeprefix("pyspark==")
    for job in JOBS:
        assert container(job)["image"] == f"trending:{version}"
        spec = spark_application(job)["spec"]
        assert spec["image"] == f"trending-spark:{version}"
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
    assert [n["metadata"]["name"] for n in objects("Namespace")] == [NAMESPACE]
    for path, document in manifests():
        if document["kind"] != "Namespace":
            assert document["metadata"]["namespace"] == NAMESPACE, path


def test_drivers_may_create_their_executors() -> None:
    for job in JOBS:
        account = spark_application(job)["spec"]["driver"]["serviceAccount"]
        named("ServiceAccount", account)
        bindings = [
            b
            for b in objects("RoleBinding")
            if {"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE} in b["subjects"]
        ]
        [binding] = bindings
        role = named("Role", binding["roleRef"]["name"])
        assert any("pods" in r["resources"] and "create" in r["verbs"] for r in role["rules"])
