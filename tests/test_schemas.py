"""The published JSON Schemas match the models that read the files, and config.jsonc names its own."""

from __future__ import annotations

import json

import pytest

from persona.benchmark.loader import manifest_schema
from persona.config import config_schema, load_config
from persona.jsonc import load_jsonc
from persona.report.export import export_schema
from persona.state import state_schema
from tests.conftest import REPO


@pytest.mark.parametrize("name, made", [("schemas/config.schema.json", config_schema),
                                        ("schemas/export.schema.json", export_schema),
                                        ("schemas/state.schema.json", state_schema),
                                        ("benchmarks/benchmark.schema.json", manifest_schema)])
def test_the_published_schema_is_the_models(name, made):
    what = name.split("/")[-1].split(".")[0]
    assert json.loads((REPO / name).read_text()) == made(), f"run: mmb schema {what} > {name}"


def test_config_jsonc_points_editors_at_its_schema():
    data, _ = load_jsonc(REPO / "config.jsonc")
    assert (REPO / data["$schema"]).resolve() == REPO / "schemas" / "config.schema.json"
    assert load_config(REPO / "config.jsonc").schema_ref == data["$schema"]


def test_the_schema_knows_every_field_and_none_of_the_internal_ones():
    props = config_schema()["properties"]
    assert {"$schema", "persona", "runs", "prices", "fail_under"} <= set(props)
    assert not {"base_dir", "source", "locations"} & set(props)
    assert props["prices"]["description"].startswith("Model name -> price")
