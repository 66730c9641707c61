"""Spark jobs over the Kafka protocol: a PySpark data source (`odradek-kafka`) with the
options and schema of Spark's built-in Kafka source, the mirroring audit and the compaction
snapshot. The modules without IO (source options, offset ranges, audit rules) are importable
without PySpark; the rest needs the `odradek[spark]` extra. The code lives in the `odradek`
package so that installing the wheel makes it importable on every Spark executor;
`spark/jobs/` holds the spark-submit entry points."""
