"""The deployment files agree with each other and with the code: docker-compose.yml (checked with
docker-compose's own validator), deploy/Dockerfile, deploy/prometheus, deploy/grafana and the
LICENSE."""

from __future__ import annotations

import argparse
import fnmatch
import functools
import hashlib
import http.server
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from connectors.broker import free_port
from trending.cli import build_parser
from trending.durations import parse_duration_ms
from trending.metrics import DEFAULT_PORT
from trending.spark import deps

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
# The folders of $TRENDING_JARS_DIR the jobs take jars from (trending.spark.deps): Spark's Kafka and
# Avro connectors, and twitter-text
JAR_GROUPS = ("connectors", "udf")
TRENDING = Path(sys.executable).parent / "trending"
OFFICIAL_IMAGES = ("apache/kafka", "prom/prometheus", "grafana/grafana")
BUILT_IMAGE = "trending:local"
BIND_ENV = "TRENDING_BIND"
PROMETHEUS_PORT = 9090  # Prometheus' default --web.listen-address


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


def docker_compose() -> str:
    binary = shutil.which("docker-compose")
    assert binary, (
        "docker-compose is needed to validate docker-compose.yml: apt-get install docker-compose"
    )
    return binary


def resolved(**environ: str) -> dict[str, Any]:
    """docker-compose.yml as `docker-compose config` resolves it (variables and their defaults
    filled in) for a shell with no TRENDING_* variables but ``environ``."""
    return _resolved(tuple(sorted(environ.items())))


@functools.cache
def _resolved(environ: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TRENDING_")}
    done = subprocess.run(
        [docker_compose(), "-f", str(ROOT / "docker-compose.yml"), "config"],
        capture_output=True,
        text=True,
        env={**clean, **dict(environ)},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = yaml.safe_load(done.stdout)
    return loaded


def trending_services() -> dict[str, dict[str, Any]]:
    """The services that run the project's image (a `trending` command)."""
    return {name: s for name, s in services().items() if s.get("image") == BUILT_IMAGE}


def unescape(text: str) -> str:
    """A compose string as the container gets it (`$$` is a literal `$`)."""
    return text.replace("$$", "$")


def trending_argv(service: dict[str, Any]) -> list[str]:
    """The arguments `trending` gets in ``service``: its command, after what its entrypoint
    adds (a generator's shell wrapper appends --start-ms)."""
    argv = [str(a) for a in service["command"]]
    if "entrypoint" in service:
        argv += ["--start-ms", "0"]
    return argv


def parse(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(argv)


def run_help(service: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The service's command with --help, run the way its container runs it."""
    command = [str(a) for a in service["command"]] + ["--help"]
    env = {**os.environ, "PATH": f"{TRENDING.parent}{os.pathsep}{os.environ['PATH']}"}
    if "entrypoint" in service:
        entrypoint = [unescape(str(a)) for a in service["entrypoint"]]
        argv = entrypoint + command
    else:
        argv = [str(TRENDING), *command]
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


def job_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in trending_services().items() if s["command"][:1] == ["run"]}


def generator_services() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in trending_services().items() if s["command"][:1] == ["produce"]}


@pytest.mark.tools
def test_compose_file_is_valid_for_docker_compose() -> None:
    result = subprocess.run(
        [docker_compose(), "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def test_compose_runs_the_same_broker_version_and_the_job() -> None:
    found = services()
    assert found["kafka"]["image"] == "apache/kafka:4.1.1"
    assert found["hashtags"]["command"][:2] == ["run", "hashtags"]
    assert (ROOT / found["hashtags"]["build"]["dockerfile"]).is_file()


def test_every_job_restarts_when_it_fails() -> None:
    jobs = [s for s in services().values() if s.get("command", [])[:1] == ["run"]]
    assert jobs
    assert all(job.get("restart") in ("on-failure", "unless-stopped", "always") for job in jobs)


def test_compose_runs_the_whole_system() -> None:
    jobs = {n: s["command"][1] for n, s in job_services().items()}
    generators = {s["command"][1] for s in generator_services().values()}
    assert sorted(jobs.values()) == ["hashtags", "sensors"]
    assert generators == {"tweets", "readings", "queries"}
    assert {"kafka", "topics", "prometheus", "grafana"} <= services().keys()


def test_every_image_is_official_or_built_here() -> None:
    for name, service in services().items():
        image = service["image"]
        if "build" in service:
            assert image == BUILT_IMAGE, name
            assert service["build"]["context"] == "."
            assert (ROOT / service["build"]["dockerfile"]).is_file()
            continue
        repository, _, tag = image.partition(":")
        assert tag and tag != "latest", f"{name}: pin a version of {image}"
        assert repository in OFFICIAL_IMAGES or "/" not in repository, f"{name}: {image}"
    assert all("build" in s for s in trending_services().values())


@pytest.mark.parametrize("name", sorted(trending_services()))
def test_every_trending_command_exists(name: str) -> None:
    service = trending_services()[name]
    done = run_help(service)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"usage: trending {' '.join(service['command'][:2])}")
    parse(trending_argv(service))  # the flags and values themselves parse


def test_the_generator_wrapper_passes_the_command_and_a_start_time() -> None:
    """The shell entrypoint of a generator hands `trending` its command plus --start-ms now."""
    service = generator_services()["tweets"]
    entrypoint = [unescape(str(a)) for a in service["entrypoint"]]
    script = entrypoint[entrypoint.index("-c") + 1].replace("exec trending", "exec echo")
    done = subprocess.run(
        [*entrypoint[: entrypoint.index("-c") + 1], script, "generator", "produce", "tweets"],
        capture_output=True,
        text=True,
        check=True,
    )
    words = done.stdout.split()
    assert words[:3] == ["produce", "tweets", "--start-ms"]
    assert re.fullmatch(r"\d{13}", words[3]), words


def test_generators_run_steadily_in_event_time() -> None:
    for name, service in generator_services().items():
        args = parse(trending_argv(service))
        assert args.rate and args.rate > 0, f"{name}: give a steady --rate"
        assert args.events_per_second == args.rate, f"{name}: event time runs at wall time"
        assert args.count >= args.rate * 86_400 * 30, f"{name}: a month at least"


def test_topics_agree_with_the_jobs_and_generators() -> None:
    topics_service = services()["topics"]
    created = set(topics_service["environment"]["TOPICS"].split())
    jobs = {s["command"][1]: parse(trending_argv(s)) for s in job_services().values()}
    hashtags, sensors = jobs["hashtags"], jobs["sensors"]
    read = {hashtags.input_topic, sensors.readings_topic, sensors.queries_topic}
    written = {
        hashtags.output_topic,
        hashtags.late_topic,
        hashtags.dead_letter_topic,
        sensors.matches_topic,
        sensors.popular_topic,
        sensors.late_topic,
        sensors.dead_letter_topic,
    }
    assert created == read | written
    generated = {parse(trending_argv(s)).topic for s in generator_services().values()}
    assert generated == read
    # the defaults the commands use when no topic flag is given
    assert "tweets" in created and "sensor-readings" in created and "sensor-queries" in created
    script = unescape(topics_service["command"][0])
    assert "--if-not-exists" in script and "$TOPICS" in script


# The network: one bridge network, ports published on 127.0.0.1 unless TRENDING_BIND says otherwise


@pytest.mark.tools
def test_no_service_uses_the_host_network() -> None:
    """Docker Desktop (macOS, Windows) has no host network: every service is on the bridge."""
    for config in (compose(), resolved()):
        for name, service in config["services"].items():
            assert "network_mode" not in service, name
            assert set(service.get("networks", {"default": None})) == {"default"}, name
    network = compose()["networks"]["default"]
    assert network.get("driver", "bridge") == "bridge"
    assert "external" not in network


def published(config: dict[str, Any]) -> Iterator[tuple[str, str, int, int]]:
    """(service, host address, host port, container port) of each port `docker-compose config`
    publishes (its form: ADDRESS:HOST:CONTAINER/PROTOCOL)."""
    for name, service in config["services"].items():
        for entry in service.get("ports", []):
            match = re.fullmatch(r"(.+):(\d+):(\d+)/tcp", str(entry))
            assert match, f"{name}: {entry} names no address to bind"
            yield name, match[1], int(match[2]), int(match[3])


@pytest.mark.tools
def test_every_published_port_binds_127_0_0_1_unless_told_otherwise() -> None:
    for name, service in services().items():
        for entry in service.get("ports", []):
            assert re.fullmatch(rf"\$\{{{BIND_ENV}:-127\.0\.0\.1\}}:(\d+):\1", entry), (
                f"{name}: publish {entry} as ${{{BIND_ENV}:-127.0.0.1}}:PORT:PORT"
            )
    default = list(published(resolved()))
    assert {address for _, address, _, _ in default} == {"127.0.0.1"}
    assert {"kafka", "prometheus", "grafana", *job_services()} <= {n for n, *_ in default}
    host_ports = [port for _, _, port, _ in default]
    assert len(set(host_ports)) == len(host_ports), "two services publish one host port"
    everywhere = list(published(resolved(**{BIND_ENV: "0.0.0.0"})))
    assert {address for _, address, _, _ in everywhere} == {"0.0.0.0"}
    assert [p for *_, p in everywhere] == [p for *_, p in default]


def named_volume_mounts(service: dict[str, Any]) -> dict[str, str]:
    """Target path -> named volume of each of the service's mounts of a declared volume."""
    declared = compose()["volumes"].keys()
    mounts = [str(v).split(":") for v in service.get("volumes", [])]
    return {target: source for source, target, *_ in mounts if source in declared}


def test_kafka_keeps_its_data_in_its_named_volume() -> None:
    """The image writes to /tmp/kraft-combined-logs unless told; that would go with the
    container at `docker compose down`."""
    kafka = services()["kafka"]
    mounts = named_volume_mounts(kafka)
    log_dirs = kafka["environment"]["KAFKA_LOG_DIRS"].split(",")
    for log_dir in log_dirs:
        path = PurePosixPath(log_dir)
        assert any(path.is_relative_to(target) for target in mounts), log_dir
        assert not path.is_relative_to("/tmp"), log_dir
    # a fixed cluster id: the formatted log directory is accepted again at the next `up`
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", kafka["environment"]["CLUSTER_ID"])


def listeners(value: str) -> dict[str, tuple[str, int]]:
    """NAME -> (host, port) of a Kafka listener list (NAME://HOST:PORT,...)."""
    found = {}
    for entry in value.split(","):
        match = re.fullmatch(r"([A-Z_]+)://([^:,]*):(\d+)", entry.strip())
        assert match, entry
        found[match[1]] = (match[2], int(match[3]))
    return found


@pytest.mark.tools
def test_kafka_listens_for_the_containers_and_for_the_host() -> None:
    """Apache Kafka's docker layout: one listener advertised by service name to the other
    containers, one advertised as localhost on the published port to clients on the host."""
    config = resolved()
    kafka = config["services"]["kafka"]
    env = kafka["environment"]
    bound = listeners(env["KAFKA_LISTENERS"])
    advertised = listeners(env["KAFKA_ADVERTISED_LISTENERS"])
    protocols = dict(p.split(":") for p in env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"].split(","))
    controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"]
    assert set(bound) == set(protocols) == {*advertised, controller}
    for name, (_, port) in advertised.items():
        assert bound[name][1] == port, name
    inside = {n: a for n, a in advertised.items() if a[0] in ("kafka", kafka.get("hostname"))}
    outside = {n: a for n, a in advertised.items() if a[0] == "localhost"}
    assert len(inside) == 1 and len(outside) == 1, advertised
    [(internal_name, (host, port))] = inside.items()
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == internal_name
    internal = f"{host}:{port}"
    for name, service in config["services"].items():
        if service.get("image") == BUILT_IMAGE:
            assert service["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == internal, name
    assert f"--bootstrap-server {internal} " in services()["topics"]["command"][0]
    assert f"--bootstrap-server {internal} " in " ".join(kafka["healthcheck"]["test"])
    [(_, (_, host_port))] = outside.items()
    kafka_ports = [(h, c) for n, _, h, c in published(config) if n == "kafka"]
    assert kafka_ports == [(host_port, host_port)], "the host listener is the published port"
    assert all(c != port for _, c in kafka_ports), "the internal listener stays inside"
    voters = env["KAFKA_CONTROLLER_QUORUM_VOTERS"]
    assert voters.endswith(f":{bound[controller][1]}")
    other = resolved(TRENDING_ADVERTISED_HOST="broker.example")
    changed = other["services"]["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    assert listeners(changed)[next(iter(outside))] == ("broker.example", host_port)


def test_jobs_keep_their_checkpoints_on_their_own_volumes() -> None:
    declared = compose()["volumes"].keys()
    mounts: set[str] = set()
    for name, service in job_services().items():
        checkpoint = Path(parse(trending_argv(service)).checkpoint)
        volumes = [v.split(":") for v in service["volumes"]]
        assert any(checkpoint.is_relative_to(target) for _, target in volumes), name
        assert all(source in declared for source, _ in volumes), name
        mounts |= {source for source, _ in volumes}
        grace_ms = parse_duration_ms(service["stop_grace_period"])
        assert grace_ms > parse(trending_argv(service)).shutdown_timeout, f"{name}: time to stop"
    assert len(mounts) == len(job_services())


# Prometheus and Grafana


def prometheus_config(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "deploy/prometheus" / name).read_text())
    return loaded


def scraped(config: dict[str, Any]) -> dict[str, list[str]]:
    return {
        c["job_name"]: [t for s in c["static_configs"] for t in s["targets"]]
        for c in config["scrape_configs"]
    }


def compose_prometheus_file() -> str:
    """The file name, in deploy/prometheus, of the config compose's Prometheus loads."""
    service = services()["prometheus"]
    assert "./deploy/prometheus:/etc/prometheus:ro" in service["volumes"]
    [option] = [a for a in service["command"] if a.startswith("--config.file=")]
    return str(PurePosixPath(option.removeprefix("--config.file=")).relative_to("/etc/prometheus"))


@pytest.mark.tools
def test_prometheus_scrapes_every_job_by_its_service_name() -> None:
    jobs = {n: parse(trending_argv(s)) for n, s in job_services().items()}
    kinds = {n: s["command"][1] for n, s in job_services().items()}
    targets = scraped(prometheus_config(compose_prometheus_file()))
    ports = {n: [c for s, _, _, c in published(resolved()) if s == n] for n in jobs}
    for name, args in jobs.items():
        assert args.metrics_host == "0.0.0.0", name
        assert targets[f"trending-{kinds[name]}"] == [f"{name}:{args.metrics_port}"], name
        assert ports[name] == [args.metrics_port], f"{name}: publish its metrics port"
    assert len(targets) == len(jobs)
    assert DEFAULT_PORT in {args.metrics_port for args in jobs.values()}


def test_the_standalone_prometheus_config_scrapes_the_same_jobs_on_this_machine() -> None:
    """deploy/prometheus/prometheus.yml (Prometheus beside the jobs, no compose) keeps the
    compose file's job names and ports, so the alert rules hold for both."""
    standalone, composed = prometheus_config("prometheus.yml"), prometheus_config("compose.yml")
    assert standalone["rule_files"] == composed["rule_files"]
    assert standalone.keys() == composed.keys()
    for job, targets in scraped(composed).items():
        ports = [t.rpartition(":")[2] for t in targets]
        assert scraped(standalone)[job] == [f"127.0.0.1:{p}" for p in ports]


@pytest.mark.tools
@pytest.mark.parametrize("name", ["prometheus.yml", "compose.yml"])
def test_promtool_accepts_the_prometheus_configs(name: str) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool checks the Prometheus configs: apt-get install prometheus"
    done = subprocess.run(
        [promtool, "check", "config", str(ROOT / "deploy/prometheus" / name)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_prometheus_service_loads_the_config_and_alert_rules() -> None:
    service = services()["prometheus"]
    config = prometheus_config(compose_prometheus_file())
    assert "--web.listen-address" not in " ".join(service["command"])
    for rule_file in config["rule_files"]:
        assert (ROOT / "deploy/prometheus" / rule_file).is_file()


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (ROOT / "deploy/grafana/dashboards/trending.json").read_text()
    )
    return loaded


def provisioned_source() -> dict[str, Any]:
    provisioning = ROOT / "deploy/grafana/provisioning"
    [source] = yaml.safe_load((provisioning / "datasources/prometheus.yml").read_text())[
        "datasources"
    ]
    assert isinstance(source, dict)
    return source


@pytest.mark.tools
def test_grafana_is_provisioned_with_the_data_source_and_dashboard() -> None:
    service = services()["grafana"]
    mounts = dict(v.split(":")[:2] for v in service["volumes"])
    provisioning = ROOT / "deploy/grafana/provisioning"
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    providers = yaml.safe_load((provisioning / "dashboards/trending.yml").read_text())["providers"]
    assert mounts["./deploy/grafana/dashboards"] == providers[0]["options"]["path"]
    home = service["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    home_file = Path(home).relative_to(providers[0]["options"]["path"])
    assert (ROOT / "deploy/grafana/dashboards" / home_file).is_file()
    source = provisioned_source()
    assert source["type"] == "prometheus"
    assert source["url"] == f"http://prometheus:{PROMETHEUS_PORT}"  # the service, by name
    assert "prometheus" in services()
    assert (
        "prometheus",
        PROMETHEUS_PORT,
    ) in {(n, c) for n, _, _, c in published(resolved())}


def datasource_references(node: Any) -> Iterator[Any]:
    """Every `datasource` value anywhere in a dashboard."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "datasource":
                yield value
            else:
                yield from datasource_references(value)
    elif isinstance(node, list):
        for item in node:
            yield from datasource_references(item)


def test_the_dashboard_imports_into_any_grafana() -> None:
    """Grafana's export form: an input for the import dialog and a `datasource` variable every
    query goes through, instead of the uid of one Grafana's data source."""
    board = dashboard()
    assert '"uid": "prometheus"' not in json.dumps(board)
    [source_input] = board["__inputs"]
    assert source_input["type"] == "datasource" and source_input["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in board["templating"]["list"]}
    variable = variables["datasource"]
    assert (variable["type"], variable["query"]) == ("datasource", "prometheus")
    assert not variable.get("multi") and not variable.get("includeAll")
    # the import dialog's choice becomes the variable's value ...
    assert variable["current"]["value"] == f"${{{source_input['name']}}}"
    # ... and where nothing replaces it (provisioning), the provisioned data source's name
    # selects it (else Grafana takes the first Prometheus data source)
    assert variable["current"]["text"] == provisioned_source()["name"]
    references = list(datasource_references(board["panels"]))
    references += list(datasource_references([v for v in variables.values() if v is not variable]))
    assert len(references) > len(board["panels"])
    for reference in references:
        assert reference == {"type": "prometheus", "uid": "${datasource}"}
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]
    used = set(re.findall(r"\$\{(\w+)\}|\$(\w+)", json.dumps(board)))
    names = {a or b for a, b in used} - {"__rate_interval", "__interval", "__all"}
    assert names <= variables.keys() | {source_input["name"]}, names


# deploy/Dockerfile


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of deploy/Dockerfile, continuation lines joined."""
    text = (ROOT / "deploy/Dockerfile").read_text()
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n\s*", " ", "\n".join(lines))
    return [
        (word.upper(), rest.strip())
        for word, _, rest in (line.strip().partition(" ") for line in joined.splitlines())
        if word
    ]


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each build stage, in order."""
    found: list[list[tuple[str, str]]] = []
    for instruction in dockerfile():
        if instruction[0] == "FROM":
            found.append([])
        found[-1].append(instruction)
    return found


def stage_name(stage: list[tuple[str, str]]) -> str | None:
    words = stage[0][1].split()
    return words[2] if len(words) == 3 and words[1].upper() == "AS" else None


def named_stages() -> dict[str, list[tuple[str, str]]]:
    return {name: s for s in stages() if (name := stage_name(s)) is not None}


def lineage(stage: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The instructions that make ``stage``: those of the stage it starts from, if it is one of
    this file's, then its own."""
    base = stage[0][1].split()[0]
    parent = named_stages().get(base)
    return [*(lineage(parent) if parent else []), *stage[1:]]


def runtime_stages() -> dict[str, list[tuple[str, str]]]:
    """The images users run: the spark-operator target and the default (last) one."""
    return {"spark-operator": named_stages()["spark-operator"], "default": stages()[-1]}


def copies(stage: list[tuple[str, str]]) -> Iterator[tuple[str | None, list[str], str]]:
    """(stage or None for the build context, sources, destination) of each COPY of ``stage``."""
    for instruction, arguments in stage:
        if instruction != "COPY":
            continue
        words = arguments.split()
        source_stage = None
        if words[0].startswith("--from="):
            source_stage = words.pop(0).removeprefix("--from=")
        *sources, destination = words
        yield source_stage, sources, destination


BUILD_FILES = ("pyproject.toml", "jvm/*/pom.xml")


def fetches(arguments: str) -> bool:
    """Whether a RUN downloads dependencies (Maven, pip) rather than installing a built wheel."""
    installs_wheel = ".whl" in arguments and "-r " not in arguments
    return "mvn " in arguments or ("pip install" in arguments and not installs_wheel)


def test_dockerfile_bases_are_official_images() -> None:
    names: set[str] = set()
    for stage in stages():
        image = stage[0][1].split()[0]
        if image not in names:
            repository, _, tag = image.partition(":")
            assert "/" not in repository, f"{image}: a Docker official (library) image"
            assert tag and tag != "latest", image
        if (name := stage_name(stage)) is not None:
            names.add(name)
    final = stages()[-1][0][1].split()[0]
    assert final.startswith("python:3.11-slim")
    assert named_stages()["spark-operator"][0][1].startswith("spark:4.1.1-scala2.13-java17-")


def test_dockerfile_copies_no_source_before_fetching_dependencies() -> None:
    """Maven's jars and the Python packages come from the build files alone, in layers that a
    change to the source leaves cached."""
    assert all(sources != ["."] for s in stages() for _, sources, _ in copies(s)), "COPY . ."
    fetching = 0
    for stage in stages():
        steps = lineage(stage)
        fetch_steps = [i for i, (name, args) in enumerate(steps) if name == "RUN" and fetches(args)]
        source_copies = [
            i
            for i, (name, args) in enumerate(steps)
            if name == "COPY"
            and not args.startswith("--from=")
            and not all(any(fnmatch.fnmatch(s, p) for p in BUILD_FILES) for s in args.split()[:-1])
        ]
        if fetch_steps and source_copies:
            assert max(fetch_steps) < min(source_copies), stage[0]
        fetching += len([i for i in fetch_steps if steps[i] in stage])
    assert fetching >= len(JAR_GROUPS) + 3  # mvn per group, pip for the wheel and each image
    for name, stage in runtime_stages().items():
        assert all(source is not None for source, _, _ in copies(stage)), f"{name}: no source"


def test_each_jar_group_is_fetched_from_its_pom_into_its_folder() -> None:
    steps = lineage(named_stages()["wheel"])
    runs = " ".join(a for i, a in steps if i == "RUN")
    for group in JAR_GROUPS:
        assert (ROOT / "jvm" / group / "pom.xml").is_file()
        assert (
            f"cd jvm/{group} && mvn -q -B dependency:copy-dependencies "
            f"-DoutputDirectory=/src/build/jars/{group}"
        ) in runs
    assert ("WORKDIR", "/src") in steps


def test_the_wheel_is_built_as_make_wheel_builds_it() -> None:
    """build.sh after twitter-text is fetched, the jar inside the package, then `pip wheel`
    with the Makefile's setuptools pin, and the build fails if the wheel lacks the jar."""
    steps = lineage(named_stages()["wheel"])
    runs = [a for i, a in steps if i == "RUN"]
    build = next(i for i, a in enumerate(runs) if "jvm/udf/build.sh" in a)
    assert any("jvm/udf" in a and "mvn " in a for a in runs[:build])
    script = runs[build]
    # setup.py puts the jar into the wheel
    assert any("setup.py" in sources for s, sources, _ in copies(named_stages()["wheel"]) if not s)
    assert script.index("build.sh") < script.index("trending/jvm/trending-udf.jar")
    assert "pip wheel --no-deps --no-build-isolation -w dist ." in script
    assert script.rstrip().endswith("has no trending/jvm/trending-udf.jar')\"")
    pin = re.search(r"'setuptools[^']*'", (ROOT / "Makefile").read_text())
    assert pin and any(pin[0] in a for a in runs[:build])


def test_the_requirements_step_lists_the_packages_dependencies(tmp_path: Path) -> None:
    [run] = [a for i, a in named_stages()["requirements"] if i == "RUN"]
    argv = shlex.split(run)
    assert argv[:2] == ["python", "-c"]
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    subprocess.run([sys.executable, "-c", argv[2]], cwd=tmp_path, check=True)
    listed = (tmp_path / "requirements.txt").read_text().splitlines()
    with (ROOT / "pyproject.toml").open("rb") as file:
        assert listed == tomllib.load(file)["project"]["dependencies"]


@pytest.mark.parametrize("name", ["spark-operator", "default"])
def test_the_images_install_the_wheel_and_its_requirements(name: str) -> None:
    stage = runtime_stages()[name]
    runs = [a for i, a in stage if i == "RUN"]
    text = "\n".join(a for _, a in dockerfile())
    assert not re.search(r"pip install\b[^&]*\s(-e|--editable)\s", text), "an editable install"
    [dist] = [
        dest for source, srcs, dest in copies(stage) if source == "wheel" and srcs == ["/src/dist"]
    ]
    [install] = [a for a in runs if "pip install" in a and ".whl" in a]
    assert f"pip install {dist}/trending-*.whl" in install
    requirements = [d for s, _, d in copies(stage) if s == "requirements"]
    assert requirements and any(f"-r {requirements[0]}" in a for a in runs)
    assert runs.index(install) > max(i for i, a in enumerate(runs) if f"-r {requirements[0]}" in a)


def test_dockerfile_runs_trending_as_a_non_root_user_with_state_on_a_volume() -> None:
    final = dict(stages()[-1])
    assert json.loads(final["ENTRYPOINT"]) == ["trending"]
    user = final["USER"].split(":")[0]
    assert user == "10001"  # deploy/k8s/deployment runs it as this user
    assert final["VOLUME"] == "/state"
    assert "openjdk-17-jre-headless" in " ".join(a for i, a in stages()[-1] if i == "RUN")
    assert dict(named_stages()["spark-operator"])["USER"] == "185"  # Spark's own user
    for name, stage in runtime_stages().items():
        users = [a for i, a in stage if i == "USER"]
        assert users, name
        assert users[-1].split(":")[0] not in ("root", "0"), name
        assert "chown" in " ".join(a for i, a in stage if i == "RUN" and "/state" in a), name


def test_the_spark_operator_image_has_its_application_file() -> None:
    runs = " ".join(a for i, a in named_stages()["spark-operator"] if i == "RUN")
    assert "> /opt/trending/main.py" in runs
    assert "from trending.cli import main" in runs


def test_every_copy_source_is_in_the_repository_or_made_by_a_stage() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    made = {
        "requirements": {"/src/requirements.txt"},
        "jars": {f"/src/build/jars/{g}" for g in JAR_GROUPS},
        "wheel": {"/src/dist", "/src/build/jars/udf"},
    }
    for stage in stages():
        for source_stage, sources, _ in copies(stage):
            for source in sources:
                if source_stage is None:
                    assert (ROOT / source).exists(), source
                    assert not any(fnmatch.fnmatch(source, p) for p in ignored), source
                else:
                    assert source in made[source_stage], f"{source_stage} makes no {source}"


def test_dockerignore_leaves_out_local_state() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    for path in (
        ".venv",
        "build",
        "dist",
        "spark-warehouse",
        "trending.egg-info",
        ".git",
        "checkpoints",
    ):
        assert any(fnmatch.fnmatch(path, p) for p in patterns), path
    for path in ("pyproject.toml", "jvm/udf/build.sh", "trending/cli.py", "schemas", "LICENSE"):
        assert not any(fnmatch.fnmatch(path, p) for p in patterns), path


def test_the_jar_folder_is_where_the_jars_are_copied() -> None:
    for name, stage in runtime_stages().items():
        env = " ".join(a for i, a in stage if i == "ENV")
        jars_dir = re.search(r"TRENDING_JARS_DIR=(\S+)", env)
        assert jars_dir, name
        assert jars_dir[1] == "/opt/trending/jars"  # deploy/k8s relies on this folder
        copied = {dest: (source, sources) for source, sources, dest in copies(stage)}
        for group in JAR_GROUPS:
            assert copied[f"{jars_dir[1]}/{group}"][1] == [f"/src/build/jars/{group}"], name
        # udf/ as `make jars` fills it: twitter-text and the project's jar, which the Spark
        # operator's pods take from there (deploy/k8s/spark-operator: extraClassPath udf/*)
        udf_stage = named_stages()[copied[f"{jars_dir[1]}/udf"][0]]
        assert any("jvm/udf/build.sh" in a for i, a in lineage(udf_stage) if i == "RUN"), name
        assert ("WORKDIR", "/src") in lineage(udf_stage)


def test_the_jobs_take_the_connectors_and_twitter_text_from_the_images_jar_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the image copies into $TRENDING_JARS_DIR (the names Maven gives the jars of
    jvm/connectors and jvm/udf, and the project's jar) is what the jobs put on spark.jars:
    nothing left to resolve."""
    folder = tmp_path / "jars"
    connectors = ["spark-sql-kafka-0-10_2.13-4.1.1.jar", "spark-avro_2.13-4.1.1.jar"]
    udf = ["twitter-text-3.1.0.jar", "jsr305-2.0.1.jar", "trending-udf.jar"]
    for group, names in zip(JAR_GROUPS, (connectors, udf), strict=True):
        (folder / group).mkdir(parents=True)
        for name in names:
            (folder / group / name).touch()
    monkeypatch.setenv(deps.JARS_ENV, str(folder))
    # the project's jar given, so that the plan needs no built wheel or checkout
    needed = deps.plan({deps.JARS_CONF: "/opt/trending-udf.jar"}, "4.1.1")
    assert needed.packages == ()
    assert sorted(Path(jar).name for jar in needed.jars) == sorted([*connectors, udf[0]])


def healthcheck_code(cmdline: Path) -> str:
    final = dict(stages()[-1])
    options, _, command = final["HEALTHCHECK"].partition("CMD ")
    assert "--start-period" in options
    argv = json.loads(command)
    assert argv[:2] == ["python", "-c"]
    assert "/proc/1/cmdline" in argv[2]
    code: str = argv[2].replace("/proc/1/cmdline", str(cmdline))
    return code


class _Metrics(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/metrics" else 404)
        self.end_headers()
        self.wfile.write(b"trending_up 1\n")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def metrics_port() -> Iterator[int]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def health(tmp_path: Path, *argv: str) -> int:
    """The exit code of the image's health check for a PID 1 running ``argv``."""
    cmdline = tmp_path / "cmdline"
    cmdline.write_text("\0".join(["/opt/trending/venv/bin/python", "trending", *argv, ""]))
    done = subprocess.run(
        [sys.executable, "-c", healthcheck_code(cmdline)], capture_output=True, check=False
    )
    return done.returncode


def test_healthcheck_asks_the_jobs_metrics_endpoint(tmp_path: Path, metrics_port: int) -> None:
    port = str(metrics_port)
    assert health(tmp_path, "run", "sensors", "--metrics-port", port) == 0
    closed = str(free_port())
    assert health(tmp_path, "run", "sensors", "--metrics-port", closed) != 0
    assert health(tmp_path, "produce", "tweets", "--rate", "10") == 0  # no endpoint to ask
    assert health(tmp_path, "run", "hashtags", "--metrics-port", "0") == 0


# LICENSE

# SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_the_license_is_the_apache_license_2_0_text() -> None:
    with (ROOT / "pyproject.toml").open("rb") as file:
        assert tomllib.load(file)["project"]["license"] == "Apache-2.0"
    text = (ROOT / "LICENSE").read_text()
    assert [line.strip() for line in text.splitlines()[1:4]] == [
        "Apache License",
        "Version 2.0, January 2004",
        "http://www.apache.org/licenses/",
    ]
    sections = re.findall(r"^   (\d+)\. ", text, re.MULTILINE)
    assert sections == [str(n) for n in range(1, 10)], "the license's nine sections, no more"
    assert "END OF TERMS AND CONDITIONS" in text
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_SHA256
