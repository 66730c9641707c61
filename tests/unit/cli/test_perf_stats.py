"""The perf tools' statistics and lines, as Kafka's perf tools compute and print them."""

from __future__ import annotations

from datetime import datetime

from odradek.cli.perf import MB, ProducerStats, detailed_stats_line, percentiles


def test_percentiles_index_the_sorted_sample() -> None:
    latencies = list(range(1000, 0, -1))
    assert percentiles(latencies, (0.5, 0.95, 0.99, 0.999)) == [501, 951, 991, 1000]
    assert percentiles([7], (0.5, 0.999)) == [7, 7]
    assert percentiles([], (0.5,)) == [0]


def test_a_window_line_is_due_after_the_interval_then_starts_over() -> None:
    stats = ProducerStats(num_records=4, interval=5.0, start=100.0)
    assert stats.record(10, MB, now=101.0) is None
    assert stats.record(30, MB, now=105.0) == (
        "2 records sent, 0.4 records/sec (0.40 MB/sec), 20.0 ms avg latency, "
        "30.0 ms max latency.")
    assert stats.window_count == 0 and stats.window_start == 105.0
    assert stats.record(2, MB, now=106.0) is None
    assert stats.window_line(now=107.0) == (
        "1 records sent, 0.5 records/sec (0.50 MB/sec), 2.0 ms avg latency, "
        "2.0 ms max latency.")


def test_the_total_line_has_averages_and_percentiles() -> None:
    stats = ProducerStats(num_records=4, interval=60.0, start=0.0)
    for latency in (1, 2, 3, 10):
        stats.record(latency, MB // 2, now=1.0)
    assert stats.total_line(now=2.0) == (
        "4 records sent, 2.0 records/sec (1.00 MB/sec), 4.00 ms avg latency, "
        "10.00 ms max latency, 3 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th.")


def test_latencies_are_sampled_for_large_runs() -> None:
    stats = ProducerStats(num_records=1_500_000, interval=60.0, start=0.0)
    for latency in range(9):
        stats.record(latency, 1, now=0.0)
    assert stats.latencies == [0, 3, 6]
    assert stats.max_latency == 8


def test_nothing_acknowledged_is_not_a_division_by_zero() -> None:
    assert ProducerStats(num_records=1, interval=1.0, start=0.0).total_line(now=0.0) == (
        "0 records sent, 0.0 records/sec (0.00 MB/sec), 0.00 ms avg latency, "
        "0.00 ms max latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th.")


def test_the_detailed_stats_line() -> None:
    line = detailed_stats_line(datetime(2024, 5, 6, 7, 8, 9, 12_000), total_bytes=3 * MB,
                               window_bytes=MB, total_count=3000, window_count=1000,
                               window_seconds=0.5)
    assert line == ("2024-05-06 07:08:09:012, 0, 3.0000, 2.0000, 3000, 2000.0000, 0, 500, "
                    "2.0000, 2000.0000")
