#!/usr/bin/env bash
# Build build/jars/udf/trending-udf.jar: the project's Spark functions (trending.udf.*) and the
# tables gen_tables.py generates from Python's Unicode data.
#
# Usage: jvm/udf/build.sh [PYTHON]   (default: .venv/bin/python of the repository)
# Needs javac/jar (JDK 17+), pyspark installed in PYTHON, and twitter-text in build/jars/udf:
#   mvn -q -f jvm/udf/pom.xml dependency:copy-dependencies -DoutputDirectory=../../build/jars/udf
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
python="${1:-$root/.venv/bin/python}"
out="$root/build/jars/udf"
work="$root/build/udf"

spark_jars="$("$python" -c "import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), 'jars'))")"
twitter_text="$(ls "$out"/twitter-text-*.jar 2>/dev/null | head -n 1 || true)"
if [[ -z "$twitter_text" ]]; then
  echo "build.sh: no twitter-text jar in $out; first run:" >&2
  echo "  mvn -q -f jvm/udf/pom.xml dependency:copy-dependencies -DoutputDirectory=../../build/jars/udf" >&2
  exit 1
fi

rm -rf "$work"
mkdir -p "$work/classes/trending/udf"
"$python" "$root/jvm/udf/gen_tables.py" "$work/classes/trending/udf/hashtag-tables.bin"
find "$root/jvm/udf/src/main/java" -name '*.java' > "$work/sources.txt"
javac --release 17 -Xlint:all,-path -Werror -encoding UTF-8 \
  -cp "$spark_jars/*:$twitter_text" -d "$work/classes" "@$work/sources.txt"
jar --create --file "$out/trending-udf.jar.tmp" -C "$work/classes" .
mv "$out/trending-udf.jar.tmp" "$out/trending-udf.jar"
echo "wrote $out/trending-udf.jar"
