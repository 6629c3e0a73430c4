"""``kustomize build`` (``kubectl kustomize``, ``kubectl apply -k``) for the part of kustomize that
deploy/k8s uses, so that its tests render the kustomizations where no kustomize is installed.

It follows kustomize v5 (sigs.k8s.io/kustomize/api) for that part, and refuses what it does not
implement, so a kustomization that starts to use more fails here instead of rendering wrongly;
tests/unit/test_k8s_manifests.py compares its output with a real kustomize's where one is on PATH.
A kustomization is built in kustomize's order:

1. ``resources``: YAML files (inside the kustomization's folder, as kustomize's load restrictor
   wants) and folders of other kustomizations, built first (steps 1-5 of their own);
2. ``configurations``: ``images`` and ``nameReference`` field specs, merged upwards with those of
   the kustomizations it includes;
3. ``configMapGenerator`` and ``secretGenerator`` from ``envs`` files and ``literals``;
4. ``namespace``;
5. ``images``: every ``containers[]``/``initContainers[]`` image anywhere, and the fields of
   ``configurations``;
6. once, for the kustomization built: generated objects named ``NAME-HASH`` (kustomize's hash of
   their content) and the references to them renamed.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
SUPPORTED = {
    "apiVersion",
    "kind",
    "namespace",
    "resources",
    "configurations",
    "configMapGenerator",
    "secretGenerator",
    "images",
}
GENERATOR_KEYS = {"name", "envs", "literals", "type", "options"}
GENERATOR_OPTIONS = {"labels", "disableNameSuffixHash"}
IMAGE_KEYS = {"name", "newName", "newTag", "digest", "tagSuffix"}
# Kinds kustomize knows to be cluster-scoped (kyaml resid), among those a project like this uses.
CLUSTER_SCOPED = {
    "Namespace",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "PersistentVolume",
    "StorageClass",
    "PriorityClass",
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
}
# kustomize's built-in references to a Secret or a ConfigMap (konfig/builtinpluginconsts/
# namereference.go), for the kinds that hold a pod spec.
_POD_SPEC_AT = {
    "Pod": "spec",
    "PodTemplate": "template/spec",
    "Deployment": "spec/template/spec",
    "ReplicaSet": "spec/template/spec",
    "DaemonSet": "spec/template/spec",
    "StatefulSet": "spec/template/spec",
    "Job": "spec/template/spec",
    "CronJob": "spec/jobTemplate/spec/template/spec",
}
_POD_REFERENCES = {
    "Secret": (
        "volumes/secret/secretName",
        "containers/env/valueFrom/secretKeyRef/name",
        "initContainers/env/valueFrom/secretKeyRef/name",
        "containers/envFrom/secretRef/name",
        "initContainers/envFrom/secretRef/name",
        "imagePullSecrets/name",
        "volumes/projected/sources/secret/name",
    ),
    "ConfigMap": (
        "volumes/configMap/name",
        "containers/env/valueFrom/configMapKeyRef/name",
        "initContainers/env/valueFrom/configMapKeyRef/name",
        "containers/envFrom/configMapRef/name",
        "initContainers/envFrom/configMapRef/name",
        "volumes/projected/sources/configMap/name",
    ),
}
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


class KustomizeError(Exception):
    """A kustomization kustomize would refuse, or one that uses what this renderer lacks."""


@dataclass(frozen=True)
class FieldSpec:
    path: str
    kind: str | None = None


@dataclass
class Config:
    """Transformer configurations: where images are, and which fields name which kind."""

    images: list[FieldSpec] = field(default_factory=list)
    name_references: dict[str, list[FieldSpec]] = field(default_factory=dict)

    def merge(self, other: Config) -> None:
        self.images += [spec for spec in other.images if spec not in self.images]
        for kind, specs in other.name_references.items():
            known = self.name_references.setdefault(kind, [])
            known += [spec for spec in specs if spec not in known]


@dataclass
class Resource:
    obj: dict[str, Any]
    hashed: bool = False  # a generated object whose name gets a hash of its content


@dataclass
class Accumulated:
    resources: list[Resource] = field(default_factory=list)
    config: Config = field(default_factory=Config)


def build(folder: Path, files: Mapping[Path, str] | None = None) -> list[dict[str, Any]]:
    """The objects ``kustomize build folder`` prints. ``files`` stands in for files on disk
    (absolute path -> text), those a generator reads, e.g. a secrets file the tests make up."""
    reader = _Reader(dict(files or {}))
    accumulated = _accumulate(folder.resolve(), reader, ())
    renamed: dict[tuple[str, str | None, str], str] = {}
    for resource in accumulated.resources:
        if resource.hashed:
            meta = resource.obj["metadata"]
            key = (resource.obj["kind"], meta.get("namespace"), meta["name"])
            meta["name"] = f"{meta['name']}-{content_hash(resource.obj)}"
            renamed[key] = meta["name"]
    for resource in accumulated.resources:
        _fix_references(resource.obj, renamed, accumulated.config)
    return [resource.obj for resource in accumulated.resources]


class _Reader:
    def __init__(self, files: dict[Path, str]) -> None:
        self.files = {path.resolve(): text for path, text in files.items()}

    def read(self, path: Path, root: Path) -> str:
        path = path.resolve()
        if not path.is_relative_to(root):
            raise KustomizeError(f"{path} is not in or below {root} (kustomize's load restrictor)")
        if path in self.files:
            return self.files[path]
        if not path.is_file():
            raise KustomizeError(f"{path}: no such file or directory")
        return path.read_text(encoding="utf-8")


def _kustomization(folder: Path) -> dict[str, Any]:
    found = [folder / name for name in KUSTOMIZATION_FILES if (folder / name).is_file()]
    if len(found) != 1:
        raise KustomizeError(f"{folder} needs exactly one of {', '.join(KUSTOMIZATION_FILES)}")
    loaded: dict[str, Any] = yaml.safe_load(found[0].read_text(encoding="utf-8")) or {}
    unknown = set(loaded) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{found[0]}: {sorted(unknown)} are not implemented here")
    if loaded.get("kind", "Kustomization") != "Kustomization":
        raise KustomizeError(f"{found[0]}: only kind Kustomization is implemented here")
    return loaded


def _accumulate(folder: Path, reader: _Reader, parents: tuple[Path, ...]) -> Accumulated:
    if folder in parents:
        raise KustomizeError(f"{folder} includes itself")
    kustomization = _kustomization(folder)
    accumulated = Accumulated()
    for entry in kustomization.get("resources", []):
        path = (folder / entry).resolve()
        if path.is_dir():
            included = _accumulate(path, reader, (*parents, folder))
            accumulated.resources += included.resources
            accumulated.config.merge(included.config)
        else:
            for document in yaml.safe_load_all(reader.read(path, folder)):
                if document is not None:
                    accumulated.resources.append(Resource(document))
    for entry in kustomization.get("configurations", []):
        accumulated.config.merge(_configuration(reader.read(folder / entry, folder)))
    for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for generator in kustomization.get(key, []):
            accumulated.resources.append(_generate(kind, generator, folder, reader))
    _check_unique(accumulated.resources, folder)
    namespace = kustomization.get("namespace")
    if namespace:
        for resource in accumulated.resources:
            _set_namespace(resource.obj, namespace)
    for image in kustomization.get("images", []):
        unknown = set(image) - IMAGE_KEYS
        if unknown:
            raise KustomizeError(f"{folder}: images {sorted(unknown)} are not implemented here")
        for resource in accumulated.resources:
            _set_images(resource.obj, image, accumulated.config.images)
    return accumulated


def _configuration(text: str) -> Config:
    loaded = yaml.safe_load(text) or {}
    unknown = set(loaded) - {"images", "nameReference"}
    if unknown:
        raise KustomizeError(f"configurations {sorted(unknown)} are not implemented here")
    config = Config(images=[FieldSpec(s["path"], s.get("kind")) for s in loaded.get("images", [])])
    for reference in loaded.get("nameReference", []):
        specs = [FieldSpec(s["path"], s.get("kind")) for s in reference["fieldSpecs"]]
        config.name_references.setdefault(reference["kind"], []).extend(specs)
    return config


def _generate(kind: str, generator: dict[str, Any], folder: Path, reader: _Reader) -> Resource:
    unknown = set(generator) - GENERATOR_KEYS - ({"type"} if kind == "Secret" else set())
    options = generator.get("options", {})
    unknown |= set(options) - GENERATOR_OPTIONS
    if unknown or (kind == "ConfigMap" and "type" in generator):
        raise KustomizeError(f"{folder}: {kind} generator {sorted(unknown)} not implemented here")
    pairs: dict[str, str] = {}
    for env_file in generator.get("envs", []):
        for number, line in enumerate(reader.read(folder / env_file, folder).splitlines()):
            _add_pair(pairs, *_env_line(line, number), folder)
    for literal in generator.get("literals", []):
        key, equals, value = literal.partition("=")
        if not key or not equals:
            raise KustomizeError(f"invalid literal source {literal}, expected key=value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        _add_pair(pairs, key, value, folder)
    metadata: dict[str, Any] = {"name": generator["name"]}
    if options.get("labels"):
        metadata["labels"] = dict(options["labels"])
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": metadata}
    if kind == "Secret":
        obj["type"] = generator.get("type", "Opaque")
        data = {k: base64.b64encode(v.encode()).decode() for k, v in pairs.items()}
    else:
        data = pairs
    obj["data"] = data  # kustomize writes data: {} for a generator with nothing in it
    return Resource(obj, hashed=not options.get("disableNameSuffixHash", False))


def _env_line(line: str, number: int) -> tuple[str, str]:
    """kustomize's reading of one line of an env file: ("", "") for a blank or comment line."""
    if number == 0:
        line = line.removeprefix("\ufeff")
    line = line.lstrip()
    if not line or line.startswith("#"):
        return "", ""
    key, _, value = line.partition("=")
    if not _ENV_NAME.fullmatch(key):
        raise KustomizeError(f"line {number + 1}: {key!r} is not a valid environment variable name")
    return key, value


def _add_pair(pairs: dict[str, str], key: str, value: str, folder: Path) -> None:
    if not key:
        return
    if key in pairs:
        raise KustomizeError(f"{folder}: key {key} appears twice in a generator")
    pairs[key] = value


def _check_unique(resources: list[Resource], folder: Path) -> None:
    seen = set()
    for resource in resources:
        meta = resource.obj["metadata"]
        key = (
            resource.obj["apiVersion"],
            resource.obj["kind"],
            meta.get("namespace"),
            meta["name"],
        )
        if key in seen:
            raise KustomizeError(f"{folder}: {key} is defined twice")
        seen.add(key)


def _set_namespace(obj: dict[str, Any], namespace: str) -> None:
    kind = obj["kind"]
    if kind == "Namespace" and obj["apiVersion"] == "v1":
        obj["metadata"]["name"] = namespace
    if kind not in CLUSTER_SCOPED:
        obj["metadata"]["namespace"] = namespace
    if kind in ("RoleBinding", "ClusterRoleBinding"):
        for subject in obj.get("subjects") or []:
            if subject.get("name") == "default":  # kustomize's default setRoleBindingSubjects
                subject["namespace"] = namespace


def _new_image(value: str, image: Mapping[str, str]) -> str:
    """kustomize's imagetag updater: ``value`` with ``image``'s name, tag and digest."""
    pattern = image["name"] + r"(:[a-zA-Z0-9_.{}-]*)?(@sha256:[a-zA-Z0-9_.{}-]*)?\Z"
    if not re.match(pattern, value):
        return value
    name, tag, digest = split_image(value)
    name = image.get("newName") or name
    if image.get("newTag") or image.get("digest"):
        tag, digest = image.get("newTag", ""), image.get("digest", "")
    elif image.get("tagSuffix"):
        tag, digest = tag + image["tagSuffix"], ""
    return name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")


def split_image(reference: str) -> tuple[str, str, str]:
    """(name, tag, digest) of an image reference, ``host:port/`` allowed (kustomize's Split)."""
    slash = reference.find("/")
    start = slash if slash > 0 else 0
    search = reference[start:]
    at, colon = search.find("@"), search.find(":")
    if at < 0 and colon < 0:
        return reference, "", ""
    if at >= 0 and (at < colon or colon < 0):
        return reference[: start + at], "", reference[start + at + 1 :]
    if at >= 0:
        return (
            reference[: start + colon],
            reference[start + colon + 1 : start + at],
            reference[start + at + 1 :],
        )
    return reference[: start + colon], reference[start + colon + 1 :], ""


def _set_images(obj: dict[str, Any], image: Mapping[str, str], specs: list[FieldSpec]) -> None:
    if obj["kind"] != "CustomResourceDefinition":
        for holder in _containers(obj):
            if isinstance(holder.get("image"), str):
                holder["image"] = _new_image(holder["image"], image)
    for spec in specs:
        if spec.kind in (None, obj["kind"]):
            _update_path(obj, spec.path.split("/"), lambda v: _new_image(v, image))


def _containers(node: Any) -> Iterator[dict[str, Any]]:
    """Every item of a ``containers`` or ``initContainers`` list anywhere in ``node`` (kustomize's
    legacy image fields)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (item for item in value if isinstance(item, dict))
            yield from _containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from _containers(item)


def _update_path(node: Any, path: list[str], update: Any) -> None:
    """Apply ``update`` to the string at ``path`` (``a/b[]/c``), through every list on the way,
    as kustomize's field specs do; a missing field is left alone."""
    if isinstance(node, list):
        for item in node:
            _update_path(item, path, update)
        return
    if not isinstance(node, dict) or not path:
        return
    key = path[0].removesuffix("[]")
    if key not in node:
        return
    if len(path) == 1:
        if isinstance(node[key], str):
            node[key] = update(node[key])
        return
    _update_path(node[key], path[1:], update)


def _fix_references(
    obj: dict[str, Any], renamed: dict[tuple[str, str | None, str], str], config: Config
) -> None:
    namespace = obj["metadata"].get("namespace")
    for (kind, referent_namespace, old), new in renamed.items():
        if referent_namespace != namespace:
            continue
        paths = [
            f"{_POD_SPEC_AT[obj['kind']]}/{p}"
            for p in _POD_REFERENCES.get(kind, ())
            if obj["kind"] in _POD_SPEC_AT
        ]
        paths += [s.path for s in config.name_references.get(kind, []) if s.kind == obj["kind"]]
        for path in paths:
            _update_path(obj, path.split("/"), lambda v, old=old, new=new: new if v == old else v)


def content_hash(obj: Mapping[str, Any]) -> str:
    """kustomize's name suffix for a generated ConfigMap or Secret (api/hasher): the sha256 of
    the JSON of its kind, data (and a Secret's type), 10 hex digits spelled its way. The JSON has
    a "name" too, always empty: kustomize looks it up as one field named "metadata/name"."""
    encoded: dict[str, Any] = {"kind": obj["kind"], "name": ""}
    encoded["data"] = copy.deepcopy(obj.get("data", ""))
    if obj["kind"] == "Secret":
        encoded["type"] = obj.get("type", "")
        if isinstance(obj.get("stringData"), dict):
            encoded["stringData"] = obj["stringData"]
    elif obj["kind"] != "ConfigMap":
        raise KustomizeError(f"no content hash for kind {obj['kind']} here")
    elif isinstance(obj.get("binaryData"), dict):
        encoded["binaryData"] = obj["binaryData"]
    text = json.dumps(encoded, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
        text = text.replace(char, escape)  # as Go's encoding/json writes them
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    digest = hashlib.sha256(text.encode()).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))
