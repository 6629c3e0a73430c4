"""The deployment files agree with each other and with the code: docker-compose.yml (checked with
docker-compose's own validator), deploy/Dockerfile, deploy/prometheus and deploy/grafana."""

from __future__ import annotations

import argparse
import fnmatch
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from connectors.broker import free_port
from trending.cli import build_parser
from trending.durations import parse_duration_ms
from trending.metrics import DEFAULT_PORT
from trending.spark.session import JAR_GROUPS

ROOT = Path(__file__).resolve().parents[2]
TRENDING = Path(sys.executable).parent / "trending"
OFFICIAL_IMAGES = ("apache/kafka", "prom/prometheus", "grafana/grafana")
BUILT_IMAGE = "trending:local"


def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def services() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = compose()["services"]
    return found


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


def test_compose_file_is_valid_for_docker_compose() -> None:
    binary = shutil.which("docker-compose")
    assert binary, (
        "docker-compose is needed to validate docker-compose.yml: apt-get install docker-compose"
    )
    result = subprocess.run(
        [binary, "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
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


def test_jobs_and_generators_reach_the_broker() -> None:
    kafka = services()["kafka"]["environment"]
    advertised = kafka["KAFKA_ADVERTISED_LISTENERS"].removeprefix("PLAINTEXT://")
    assert f"{advertised.split(':')[1]}:{advertised.split(':')[1]}" in services()["kafka"]["ports"]
    for name, service in trending_services().items():
        assert service["environment"]["KAFKA_BOOTSTRAP_SERVERS"] == advertised, name
        assert service["network_mode"] == "host", name
    assert f"--bootstrap-server {advertised}" in services()["topics"]["command"][0]


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


def prometheus_config() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "deploy/prometheus/prometheus.yml").read_text())
    return loaded


def test_prometheus_scrapes_every_job_on_its_own_port() -> None:
    jobs = {s["command"][1]: parse(trending_argv(s)) for s in job_services().values()}
    ports = [args.metrics_port for args in jobs.values()]
    assert len(set(ports)) == len(ports), "jobs on one host network need their own ports"
    assert DEFAULT_PORT in ports
    scraped = {
        c["job_name"]: [t for s in c["static_configs"] for t in s["targets"]]
        for c in prometheus_config()["scrape_configs"]
    }
    for job, args in jobs.items():
        assert args.metrics_host == "0.0.0.0", job
        assert scraped[f"trending-{job}"] == [f"127.0.0.1:{args.metrics_port}"]
    assert len(scraped) == len(jobs)


def test_prometheus_service_loads_the_config_and_alert_rules() -> None:
    service = services()["prometheus"]
    assert "./deploy/prometheus:/etc/prometheus:ro" in service["volumes"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in service["command"]
    assert service["network_mode"] == "host"
    for rule_file in prometheus_config()["rule_files"]:
        assert (ROOT / "deploy/prometheus" / rule_file).is_file()


def test_grafana_is_provisioned_with_the_data_source_and_dashboard() -> None:
    service = services()["grafana"]
    mounts = dict(v.split(":")[:2] for v in service["volumes"])
    provisioning = ROOT / "deploy/grafana/provisioning"
    assert mounts["./deploy/grafana/provisioning"] == "/etc/grafana/provisioning"
    providers = yaml.safe_load((provisioning / "dashboards/trending.yml").read_text())["providers"]
    assert mounts["./deploy/grafana/dashboards"] == providers[0]["options"]["path"]
    home = service["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    home_file = Path(home).relative_to(providers[0]["options"]["path"])
    dashboard = json.loads((ROOT / "deploy/grafana/dashboards" / home_file).read_text())
    [source] = yaml.safe_load((provisioning / "datasources/prometheus.yml").read_text())[
        "datasources"
    ]
    assert source["url"] == "http://127.0.0.1:9090"  # Prometheus' default port, host network
    assert "--web.listen-address" not in " ".join(services()["prometheus"]["command"])
    used = {
        t["datasource"]["uid"]
        for p in dashboard["panels"]
        for t in p["targets"]
        if isinstance(t.get("datasource"), dict)
    }
    assert used <= {source["uid"]}


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


def test_dockerfile_bases_are_official_images() -> None:
    names: set[str] = set()
    for stage in stages():
        words = stage[0][1].split()
        image = words[0]
        if image not in names:
            repository, _, tag = image.partition(":")
            assert "/" not in repository, f"{image}: a Docker official (library) image"
            assert tag and tag != "latest", image
        if len(words) == 3 and words[1].upper() == "AS":
            names.add(words[2])
    final = stages()[-1][0][1].split()[0]
    assert final.startswith("python:3.11-slim")


def test_dockerfile_runs_trending_as_a_non_root_user_with_state_on_a_volume() -> None:
    final = dict(stages()[-1])
    assert json.loads(final["ENTRYPOINT"]) == ["trending"]
    user = final["USER"].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert final["VOLUME"] == "/state"
    assert "openjdk-17-jre-headless" in " ".join(a for i, a in stages()[-1] if i == "RUN")
    for stage in stages():
        users = [a for i, a in stage if i == "USER"]
        if users:
            assert users[-1].split(":")[0] not in ("root", "0"), stage[0]


def copy_sources() -> Iterator[tuple[str | None, str, str]]:
    """(stage or None for the build context, source, destination) of every COPY."""
    for instruction, arguments in dockerfile():
        if instruction != "COPY":
            continue
        words = arguments.split()
        stage = None
        if words[0].startswith("--from="):
            stage = words.pop(0).removeprefix("--from=")
        *sources, destination = words
        for source in sources:
            yield stage, source, destination


def test_every_copy_source_is_in_the_repository_or_made_by_make_jars() -> None:
    ignored = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    jar_groups = set()
    for stage, source, _ in copy_sources():
        if stage is None:
            assert (ROOT / source).exists(), source
            assert not any(fnmatch.fnmatch(source, pattern) for pattern in ignored), source
            continue
        assert stage == "jars"
        group = Path(source).relative_to("/src/build/jars")
        jar_groups.add(str(group))
        assert (ROOT / "jvm" / str(group) / "pom.xml").is_file(), f"no make target makes {source}"
    assert jar_groups == set(JAR_GROUPS)
    jars_stage = next(s for s in stages() if s[0][1].endswith("AS jars"))
    assert ("WORKDIR", "/src") in jars_stage
    assert any(i == "RUN" and a.startswith("make jars") for i, a in jars_stage)
    assert re.search(r"^jars:", (ROOT / "Makefile").read_text(), re.MULTILINE)


def test_the_jar_folder_is_where_the_jars_are_copied() -> None:
    for stage in stages()[1:]:
        env = " ".join(a for i, a in stage if i == "ENV")
        jars_dir = re.search(r"TRENDING_JARS_DIR=(\S+)", env)
        assert jars_dir, stage[0]
        copied = [a.split()[-1] for i, a in stage if i == "COPY" and a.startswith("--from=jars")]
        assert sorted(copied) == sorted(f"{jars_dir[1]}/{g}" for g in JAR_GROUPS)


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
