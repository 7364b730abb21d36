"""Per-image test correctness as a record stores it (issue 61: the committed CIFAR-10 reference
stays small): packed bits round-trip exactly, an older record's string of 0s and 1s is read the
same, and a damaged one is a one-line error."""
from __future__ import annotations

import numpy as np
import pytest

from dsmlib.models.sec5_distillation.correctness import PACKED_PREFIX, pack_flags, unpack_flags


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 359, 10_000])
def test_packed_flags_round_trip(n):
    flags = np.random.default_rng(n).random(n) < 0.6
    text = pack_flags(flags)
    assert text.startswith(f"{PACKED_PREFIX}{n}:")
    assert unpack_flags(text).tolist() == flags.astype(np.uint8).tolist()


def test_ten_thousand_test_images_take_a_sixth_of_the_old_string():
    text = pack_flags(np.ones(10_000, dtype=bool))
    assert len(text) == len("b64:10000:") + 4 * 1250 // 3 + 2        # 1,250 bytes in base64
    assert len(text) < 10_000 / 5


def test_an_older_records_string_is_read_the_same():
    assert unpack_flags("0110").tolist() == [0, 1, 1, 0]
    assert unpack_flags(pack_flags([False, True, True, False])).tolist() == [0, 1, 1, 0]


@pytest.mark.parametrize("bad", ["b64:5:@@", "b64:x:AA==", "b64:20:AA==", "0120"])
def test_a_damaged_record_is_one_line(bad):
    with pytest.raises(ValueError, match="test_correct") as err:
        unpack_flags(bad)
    assert "\n" not in str(err.value)
