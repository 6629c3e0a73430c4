"""Check the hashtag extractors against twitter-text's conformance suite.

Usage: ``.venv/bin/python bench/check_conformance.py PATH/TO/extract.yml [--no-java]``

The file is ``conformance/extract.yml`` of the public twitter/twitter-text repository (not
shipped here). Runs every case of the ``hashtags``, ``hashtags_from_astral`` and
``hashtags_with_indices`` groups through the Python extractor, and the ``hashtags`` and
``hashtags_from_astral`` cases through the Spark function ``trending.udf.HashtagKeys``
(its keys against ``hashtag_key`` of the expected tags, distinct, in order), and through
twitter-text itself as a sanity check. Prints pass/fail counts; exits 1 on any failure.
The Java part needs ``make jars``.
"""

from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from connectors.jvm import (  # noqa: E402
    compile_java,
    jars_root,
    java_executable,
    length_prefixed,
    spark_api_jars,
)
from trending.text.hashtags import (  # noqa: E402
    extract_hashtags,
    extract_hashtags_with_indices,
    hashtag_key,
)

GROUPS = ("hashtags", "hashtags_from_astral", "hashtags_with_indices")


def _python(group: str, case: dict[str, Any]) -> tuple[bool, object]:
    text = case["text"]
    if group == "hashtags_with_indices":
        got: object = [
            {"hashtag": tag, "indices": [start, end]}
            for tag, start, end in extract_hashtags_with_indices(text)
        ]
    else:
        got = extract_hashtags(text)
    return got == case["expected"], got


def _java_results(texts: list[str]) -> list[tuple[list[str], list[str]]]:
    """Per text: twitter-text's tags and HashtagKeys' keys, via tests/jvm/HashtagOracle."""
    root = jars_root()
    udf = sorted((root / "udf").glob("*.jar"))
    if not any(j.name == "trending-udf.jar" for j in udf):
        raise SystemExit(f"no trending-udf.jar in {root / 'udf'}: run `make jars` (or --no-java)")
    classpath = [*udf, *spark_api_jars()]
    with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
        compile_java(REPO / "tests" / "jvm" / "HashtagOracle.java", classpath, Path(tmp))
        out = subprocess.run(
            [
                java_executable(),
                "-cp",
                os.pathsep.join([tmp, *map(str, classpath)]),
                "HashtagOracle",
                "compare",
            ],
            input=length_prefixed(texts),
            capture_output=True,
            check=True,
        ).stdout
    pos = 0

    def read_int() -> int:
        nonlocal pos
        (value,) = struct.unpack_from(">i", out, pos)
        pos += 4
        return int(value)

    def read_str() -> str:
        nonlocal pos
        size = read_int()
        pos += size
        return out[pos - size : pos].decode("utf-8")

    results = []
    for _ in texts:
        oracle = []
        for _ in range(read_int()):
            read_int(), read_int()
            oracle.append(read_str())
        for _ in range(read_int()):
            read_int(), read_int()
        keys = [read_str() for _ in range(read_int())]
        results.append((oracle, keys))
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("extract_yml", type=Path)
    parser.add_argument("--no-java", action="store_true")
    args = parser.parse_args()
    tests = yaml.safe_load(args.extract_yml.read_text(encoding="utf-8"))["tests"]

    failures = 0
    for group in GROUPS:
        cases = tests[group]
        passed = 0
        for case in cases:
            ok, got = _python(group, case)
            passed += ok
            if not ok:
                print(f"  FAIL python {group}: {case['description']}: {got!r}")
        failures += len(cases) - passed
        print(f"python {group:<24} {passed:>3}/{len(cases)} passed")

    if not args.no_java:
        for group in GROUPS[:2]:
            cases = tests[group]
            results = _java_results([case["text"] for case in cases])
            udf_passed = oracle_passed = 0
            for case, (oracle, keys) in zip(cases, results, strict=True):
                expected_keys = list(dict.fromkeys(map(hashtag_key, case["expected"])))
                oracle_passed += oracle == case["expected"]
                udf_passed += keys == expected_keys
                if keys != expected_keys:
                    print(f"  FAIL java udf {group}: {case['description']}: {keys!r}")
            failures += len(cases) - udf_passed
            print(f"java HashtagKeys {group:<24} {udf_passed:>3}/{len(cases)} passed")
            print(f"java twitter-text {group:<23} {oracle_passed:>3}/{len(cases)} passed")
    print("all passed" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
