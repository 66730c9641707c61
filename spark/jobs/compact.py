"""spark-submit entry point of the compaction snapshot (odradek.spark.compaction):

    spark-submit spark/jobs/compact.py --bootstrap east:9092 --topics 'customers' \
        --output snapshots/ [--verify --mirror-bootstrap west:9092 --source-alias east]
"""

import sys

from odradek.spark.compaction import main

if __name__ == "__main__":
    sys.exit(main())
