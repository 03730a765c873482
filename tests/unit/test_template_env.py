"""`{{ env.NAME }}` in a command template (issue 31 item 6): read where it is rendered, refused by
name when unset, never a value of the point (not a label, not config)."""

from __future__ import annotations

import pytest

from optlog.core import template as T
from optlog.runs.record import env_references, unrender


def test_env_is_read_at_render_time_and_an_unset_name_is_refused_by_name():
    env = {"SRV": "/opt/llama b/server", "M": "/models/x.gguf"}
    assert T.render_argv("{{ env.SRV }} -m {{ env.M }} -c {{ c * 2 }}", {"c": 3, "env": env}) == \
        ["/opt/llama b/server", "-m", "/models/x.gguf", "-c", "6"]
    with pytest.raises(T.TemplateError, match="environment variable NOPE is not set"):
        T.render("{{ env.NOPE }}", {"env": env})
    assert T.placeholders("{{ env.SRV }} {{ c }}") == {"c"} and T.env_names("{{ env.SRV }} {{ c }}") == {"SRV"}


def test_the_record_gets_the_reference_back_for_each_rendered_value():
    data = {"server": {"cmd": "{{ env.SRV }} --port {{ port }}"}, "bench": {"env": {"X": "{{ env.ON }}"}}}
    refs = env_references(data, {"SRV": "/opt/srv", "ON": "1", "OTHER": "/opt"})
    assert refs == {"/opt/srv": "{{ env.SRV }}"}  # a 1-character value could occur by chance: left
    assert unrender({"argv": ["/opt/srv", "--port", "80"], "n": 1}, refs) == \
        {"argv": ["{{ env.SRV }}", "--port", "80"], "n": 1}
