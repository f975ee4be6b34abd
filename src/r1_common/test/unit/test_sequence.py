"""r1_common.sequence.SequenceGaps: lost messages from header.seq gaps."""
from r1_common.sequence import SequenceGaps


def test_consecutive_numbers_miss_nothing():
    g = SequenceGaps()
    assert [g.observe(s) for s in range(1, 100)] == [0] * 99
    assert g.missed == 0


def test_gaps_count_the_numbers_skipped():
    g = SequenceGaps()
    seen = [5, 6, 9, 10, 20]          # first message at 5: joined late, nothing missed yet
    assert [g.observe(s) for s in seen] == [0, 0, 2, 0, 9]
    assert g.missed == 11


def test_unnumbered_publisher_counts_nothing():
    g = SequenceGaps()                # roscpp leaves seq as set: usually 0 throughout
    assert [g.observe(0) for _ in range(10)] == [0] * 10
    assert g.missed == 0


def test_restarted_publisher_starts_again_without_a_count():
    g = SequenceGaps()
    for s in (100, 101, 102):
        g.observe(s)
    assert g.observe(1) == 0          # the publisher restarted: numbers start again
    assert g.observe(2) == 0
    assert g.observe(4) == 1          # and gaps after the restart count
    assert g.observe(4) == 0          # the same number twice is no loss
    assert g.missed == 1


def test_jump_beyond_any_backlog_is_another_numbering():
    g = SequenceGaps()
    g.observe(3)
    assert g.observe(3 + SequenceGaps.MAX_GAP + 1) == 0
    assert g.missed == 0
