"""The trailer vocabulary of optlog's commits, in one place: the keys optlog writes (and `optlog log`
reads back), and the events (`Optlog-Event`) a decision commit can record. Every writer and reader
takes the spelling from here; `tests/unit/test_vocabularies.py` checks that each event a service
verb commits is one of EVENTS and that no other module spells a trailer key.
"""

from __future__ import annotations

from typing import Literal, get_args

EVENT = "Optlog-Event"  # what happened (one of EVENTS)
HYPOTHESIS = "Optlog-Hypothesis"  # the hypothesis ids the commit is about, comma-separated
PREDICTION = "Optlog-Prediction"  # a prediction id
VERSION = "Optlog-Version"  # the prediction's version after an edit
RUN = "Optlog-Run"  # run ids, comma-separated
LAUNCH = "Optlog-Launch"  # a launch ref (L12)
STATUS = "Optlog-Status"  # a verdict's new status
PARENT = "Optlog-Parent"  # the hypothesis a new one pivoted from
RIVALS = "Optlog-Rivals"  # the rival hypotheses named at creation
ACTOR = "Optlog-Actor"  # who made the decision (user, agent:NAME)
HAND_EDIT = "Optlog-Hand-Edit"  # paths edited outside optlog that the commit includes
RECOVERED = "Optlog-Recovered"  # committed by a later command after an interrupted one
# in a commit that records several decisions (one trailer group each, led by its EVENT line):
SUBJECT = "Optlog-Subject"  # the decision's own subject (what its own commit's subject would be)
SUMMARY = "Optlog-Summary"  # the decision's own reason (its own commit's body, after the shared one)

KEYS: tuple[str, ...] = (EVENT, HYPOTHESIS, PREDICTION, VERSION, RUN, LAUNCH, STATUS, PARENT, RIVALS, ACTOR,
                         HAND_EDIT, RECOVERED, SUBJECT, SUMMARY)

Event = Literal[
    "init", "identity", "calibrate",
    "hypothesis-add", "hypothesis-edit", "override", "hand-edit",
    "prediction-add", "prediction-edit",
    "verdict", "invalidate", "rediagnose",
    "launch", "evidence",
    "plan-render", "report",
]
EVENTS: tuple[str, ...] = get_args(Event)
