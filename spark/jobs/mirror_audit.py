"""spark-submit entry point of the mirroring audit (odradek.spark.audit):

    spark-submit spark/jobs/mirror_audit.py --source-bootstrap east:9092 \
        --target-bootstrap west:9092 --source-alias east --topics 'orders.*' --output out/
"""

import sys

from odradek.spark.audit import main

if __name__ == "__main__":
    sys.exit(main())
