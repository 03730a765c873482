"""`optlog.nocycles.paused`: the cyclic collector is off inside and as it was after, nested or
not, and after an error."""

from __future__ import annotations

import gc

import pytest

from optlog import nocycles


def test_the_collector_is_off_inside_and_as_it_was_after():
    was = gc.isenabled()
    try:
        gc.enable()
        with nocycles.paused():
            assert not gc.isenabled()
            with nocycles.paused():
                assert not gc.isenabled()
            assert not gc.isenabled()  # an inner pause leaves the outer one as it was
        assert gc.isenabled()
        with pytest.raises(ValueError), nocycles.paused():
            raise ValueError("on the way")
        assert gc.isenabled()
        gc.disable()
        with nocycles.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # off before: left off
    finally:
        (gc.enable if was else gc.disable)()
