"""Fixtures shared by the whole suite."""
import pytest

NOT_BUILT = "map (\\r -> sort (zip r r)) [[2, 1], [3]]"


@pytest.fixture
def not_built(monkeypatch):
    """A program the compiled targets do not build, for the tests of the "not built yet"
    answer (`NotImplementedError` naming the construct, no fallback to interp, nothing bound,
    `accel` exiting 2). Every construct of LANGUAGE.md flattens today, so this takes one
    flatten rule away for the test: `sort` of tuples inside a map."""
    from accel_kernel.passes.flatten.wholearray import WholeArrayRules

    def refuse(self, *args):
        raise NotImplementedError("flatten: `sort` of tuples inside a map is not built yet")
    monkeypatch.setattr(WholeArrayRules, "_sort_tuples_lifted", refuse)
    return NOT_BUILT
