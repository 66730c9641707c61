from odradek.replication.throttle import WINDOW_MS, WINDOWS, ByteRate, throttled, valid_entry


def test_a_throttled_list_names_replicas_by_partition_and_broker() -> None:
    assert throttled(["0:1", "2:3"], 0, 1)
    assert not throttled(["0:1", "2:3"], 0, 3)
    assert throttled(["*"], 7, 9)
    assert not throttled([], 0, 1)
    assert [valid_entry(e) for e in ("*", "0:1", "0", "a:1", "0:")] == [
        True, True, False, False, False]


def test_the_rate_averages_over_the_windows_and_forgets_old_ones() -> None:
    rate = ByteRate()
    rate.record(1000, now_ms=0)
    assert rate.rate(500) == 1000.0, "a partial first window counts as a whole second"
    rate.record(1000, now_ms=1500)
    assert rate.rate(2000) == 1000.0
    assert rate.exceeded(999, 2000) and not rate.exceeded(1000, 2000)
    later = 2000 + WINDOWS * WINDOW_MS
    assert rate.rate(later) == 0.0
