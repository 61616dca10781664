"""Progress events: one typed class for every engine, readable by attribute or by key."""

import pytest

from faircert.progress import ProgressEvent


def test_an_event_holds_only_what_the_engine_reported():
    event = ProgressEvent(elapsed_s=1.5, certified=0.25, boxes=12)
    assert event.to_dict() == {"elapsed_s": 1.5, "certified": 0.25, "boxes": 12}
    assert event["certified"] == 0.25 and event.get("rows") is None and event.get("rows", 0) == 0
    assert "boxes" in event and "rows" not in event and "no such field" not in event
    with pytest.raises(KeyError):
        event["falsified"]
    with pytest.raises(KeyError):
        event["__class__"]


def test_every_engine_reports_events_through_the_api():
    import numpy as np

    import faircert
    from faircert.domain import Domain, Feature
    from faircert.models.network import ReluNetwork

    rng = np.random.default_rng(0)
    net = ReluNetwork([rng.normal(size=(6, 3)), rng.normal(size=(1, 6))], [rng.normal(size=6), rng.normal(size=1)])
    dom = Domain((Feature("a", "integer", 0, 30), Feature("p", "binary"), Feature("b", "integer", 0, 30)))
    seen: list[ProgressEvent] = []
    result = faircert.verify(net, dom, protected="p", time_limit=10, progress=seen.append)
    assert seen and all(isinstance(e, ProgressEvent) for e in seen)
    last = seen[-1]
    assert last.certified is not None and last.falsified is not None
    assert last.certified <= result.certified + 1e-12 and last.falsified <= result.falsified + 1e-12
