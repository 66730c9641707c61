"""Settings shared by the librdkafka (confluent-kafka) clients that Odradek's tools and jobs
make."""

FETCH_QUEUE_BACKOFF_MS = 10
"""`fetch.queue.backoff.ms` for a consumer that reads as fast as it can: once a partition's
local queue holds `queued.min.messages`, librdkafka postpones its next fetch by this long,
a second by default, while such a reader drains the queue in a tenth of that and idles."""
