"""Checkpoint files as `--resume` reads them: size-checked before reading, another job's or a
foreign file refused from its head without reading the rest, every message naming the file and
never a missing value as "None"; and every tree run writes its final checkpoint."""

from __future__ import annotations

import json

import pytest

from faircert import limits
from faircert.checkpoint import HEAD_BYTES, Checkpoint
from faircert.errors import FaircertError

IDENTITY = {"model": "m" * 64, "question": "q" * 64}


def _refused(path, match: str, kind: str = "tree-boxes") -> str:
    with pytest.raises(FaircertError, match=match) as caught:
        Checkpoint(path, kind, IDENTITY).load()
    message = str(caught.value)
    assert str(path) in message and "None" not in message
    return message


@pytest.fixture
def unread(monkeypatch):
    """Reading a whole checkpoint fails the test: it must be refused from its head."""

    def whole(*args, **kwargs):
        raise AssertionError("the whole file was read")

    monkeypatch.setattr(limits, "read_text", whole)


def test_a_large_foreign_file_is_refused_from_its_head(tmp_path, unread):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"rows": "x" * (8 * HEAD_BYTES), "format": "faircert-checkpoint"}))
    _refused(path, "not a faircert checkpoint")


def test_another_jobs_large_checkpoint_is_refused_from_its_head(tmp_path, unread):
    path = tmp_path / "other.ckpt"
    Checkpoint(path, "network-boxes", IDENTITY).save({"boxes": "A" * (8 * HEAD_BYTES)})
    _refused(path, "a checkpoint of 'network-boxes'")
    Checkpoint(path, "tree-boxes", {**IDENTITY, "model": "n" * 64}).save({"boxes": "A" * (8 * HEAD_BYTES)})
    _refused(path, "written for another model")


def test_missing_fields_are_named_not_printed_as_none(tmp_path, unread):
    """A large file naming the format but not the kind of run (it said "a checkpoint of None" after
    reading it all), in any JSON layout: refused from its head."""
    path = tmp_path / "no-kind.ckpt"
    big = {"boxes": "A" * (8 * HEAD_BYTES)}
    for body in (
        {"format": "faircert-checkpoint", "version": 3, "state": big},
        {"format": "faircert-checkpoint", "kind": "tree-boxes", "state": big},
        {"format": "faircert-checkpoint", "version": 3, "kind": "tree-boxes", "state": big},
    ):
        for layout in ({"separators": (",", ":")}, {}, {"indent": 1}):
            path.write_text(json.dumps(body, **layout))
            _refused(path, "not a faircert checkpoint")


def test_a_file_over_the_bound_is_refused_before_it_is_read(tmp_path, unread, monkeypatch):
    path = tmp_path / "huge.ckpt"
    Checkpoint(path, "tree-boxes", IDENTITY).save({"boxes": "A" * 5000})
    monkeypatch.setattr(limits, "MAX_CHECKPOINT_BYTES", 4096)
    _refused(path, "more than faircert reads")


def test_a_checkpoint_rewritten_by_another_program_is_still_read(tmp_path):
    path = tmp_path / "pretty.ckpt"
    Checkpoint(path, "tree-boxes", IDENTITY).save({"boxes": [1, 2, 3]})
    path.write_text(json.dumps(json.loads(path.read_text()), indent=2))
    assert Checkpoint(path, "tree-boxes", IDENTITY).load() == {"boxes": [1, 2, 3]}


@pytest.mark.parametrize("time_limit", [None, 20])
def test_a_tree_run_the_region_path_ends_writes_its_checkpoint_and_resumes(tmp_path, time_limit):
    from test_workers import _adult_like

    import faircert

    ir, dom = _adult_like()
    path = tmp_path / "run.ckpt"
    options = dict(protected="s", kappa=0.5, epsilon={"a": 1}, workers=1, time_limit=time_limit)
    first = faircert.verify(ir, dom, checkpoint=path, **options)
    assert path.exists() and first.stats["checkpoints"] == 1 and first.stopped == "done"
    resumed = faircert.verify(ir, dom, resume=path, **options)
    assert (resumed.certified, resumed.falsified, resumed.undecided) == (
        first.certified,
        first.falsified,
        first.undecided,
    )
