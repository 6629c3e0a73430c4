"""The hashtag step two ways on the same tweets: the JVM function vs a vectorized (Arrow) UDF.

Reads the benchmark topic as a batch, decodes Avro in the JVM, extracts the distinct keys of
every tweet and writes to Spark's ``noop`` sink. Prints ``name=... rows=N seconds=S`` lines.
"""

from __future__ import annotations

import sys
import time

import pandas as pd
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from connectors.avro import schema_json
from connectors.spark_kafka import decode_avro
from trending.spark.session import build_session
from trending.text.hashtags import hashtag_keys


@F.pandas_udf(ArrayType(StringType()))
def arrow_hashtag_keys(texts: pd.Series) -> pd.Series:
    return texts.map(hashtag_keys)


def main(bootstrap: str, topic: str) -> None:
    spark = build_session("bench-extractor", "local[2]", shuffle_partitions=2)
    raw = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
    tweets = decode_avro(raw.option("subscribe", topic).load(), schema_json("tweet"), None)
    text = F.col("record.text")
    steps: dict[str, Column] = {
        "warm-up (jvm)": F.call_function("hashtag_keys", text),
        "jvm function": F.call_function("hashtag_keys", text),
        "arrow pandas_udf": arrow_hashtag_keys(text),
    }
    rows = tweets.count()
    for name, keys in steps.items():
        started = time.monotonic()
        tweets.select(F.size(keys)).write.format("noop").mode("overwrite").save()
        print(f"name={name} rows={rows} seconds={time.monotonic() - started:.3f}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
